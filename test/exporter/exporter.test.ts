/**
 * The composition root (src/exporter/exporter.ts) as `/readyz` reads it: not ready until it has started and every
 * account's first poll of every API has been tried (a Kubernetes readiness probe must not send traffic to a pod that
 * has not begun polling), and its status lists one row per API each account asks for.
 */
import type { Server } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { Exporter } from '../../src/exporter/exporter.js';
import { silentLogger } from '../../src/log.js';
import { closeServer } from '../../src/main.js';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import { configFrom, serveExporter, waitFor } from '../helpers/stack.js';

let sim: Simulator | undefined;
let server: Server | undefined;
let exporter: Exporter | undefined;
afterEach(async () => {
  await exporter?.stop(1000);
  if (server) await closeServer(server, 1000);
  await sim?.close();
  sim = undefined;
  server = undefined;
  exporter = undefined;
});

describe('/readyz of the exporter', () => {
  it('is 503 "starting" before start(), then 200 once every first poll was tried', async () => {
    sim = await startSimulator({ seed: 3 });
    exporter = new Exporter({
      config: configFrom({
        api: { base_url: sim.url, token: 'demo-token' },
        metrics: { lookback: '10m', delay: '0m' },
        accounts: [{ name: 'demo', dvr_streams: ['live/main'], recordings: true }],
      }),
      log: silentLogger,
      version: 'test',
      defaultMetrics: false,
    });
    const served = await serveExporter(exporter);
    server = served.server;
    const url = `${served.url}/readyz`;

    const before = await fetch(url);
    expect(before.status).toBe(503);
    expect(await before.text()).toBe('not ready: starting\n');

    await exporter.start();
    await waitFor(async () => (await fetch(url)).status === 200, 10_000, 'ready');
    expect(
      exporter
        .status()
        .accounts.map((a) => `${a.api} ${a.name}`)
        .sort(),
    ).toEqual(['dvr-net demo', 'metrics demo', 'recorder-cloud demo']);
  });
});
