/**
 * Issue 25, row 7: an inventory listing 100,000 accounts, of which `accounts_discovery.max_accounts` (10,000 by
 * default) are started. The row is the longest event-loop stall from the exporter's start until the 10,000 run
 * (the inventory read, filtered, sorted for the cap and diffed in slices; each account started in slices), beside
 * the same reading, filtering and sorting done in one block as discovery did before (the baseline); and the time
 * from the stop's call until every loop settled. Real clock, real HTTP on loopback to an in-process simulator (its
 * inventory answer is a prepared string: serving it costs the loop little). Each run starts after a full GC.
 */
import { loadConfig } from '../src/config/index.js';
import { keeps, nameRefusal } from '../src/discovery/discovery.js';
import type { AccountPollers } from '../src/exporter/account-pollers.js';
import { Exporter } from '../src/exporter/exporter.js';
import { silentLogger } from '../src/log.js';
import { closeServer, listen } from '../src/main.js';
import { startSimulator } from '../src/simulator/server.js';
import { DEMO_PASSWORD, DEMO_USER } from '../src/simulator/world.js';
import { fullGc, maxStall } from './measure.js';
import type { BenchRow } from './report.js';

const LISTED = 100_000;
const STARTED = 10_000;

export async function discoveryBenchmarks(log: (line: string) => void): Promise<BenchRow[]> {
  const names = Array.from(
    { length: LISTED },
    (_, i) => `acct-${String((i * 7919) % LISTED).padStart(6, '0')}`,
  );
  const body = JSON.stringify(names.map((name, i) => ({ status: 'active', uid: `1-1-${i}`, name })));

  fullGc(2);
  const include = /^(?:.*)$/;
  const oneBlock = await maxStall(async () => {
    const kept = names.filter((n) => keeps({ include }, n) && nameRefusal(n, 128) === undefined);
    kept.sort();
  });

  const sim = await startSimulator({ seed: 7 });
  sim.setInventoryBody(body);
  const text = JSON.stringify({
    api: { base_url: sim.url, username: DEMO_USER, password: DEMO_PASSWORD, requests_per_second: 50 },
    accounts_discovery: { enabled: true, interval: '10m' },
    accounts: [],
  });
  const exporter = new Exporter({
    config: loadConfig({ file: 'bench.yml', env: {}, readFile: () => text }),
    log: silentLogger,
    version: 'bench',
    defaultMetrics: false,
    answerParser: { workerUrl: new URL('../src/offloop/worker.js', import.meta.url) },
  });
  const server = await listen(exporter.app, { host: '127.0.0.1', port: 0 });
  const pollers = () => (exporter as unknown as { pollers?: AccountPollers }).pollers;
  fullGc(2);
  let startMs = 0;
  const sliced = await maxStall(async () => {
    const t0 = performance.now();
    await exporter.start();
    while ((pollers()?.size ?? 0) < STARTED) await new Promise((r) => setTimeout(r, 10));
    startMs = performance.now() - t0;
  });
  const s0 = performance.now();
  await exporter.stop(2500);
  const stopMs = performance.now() - s0;
  await closeServer(server, 500);
  await sim.close();
  log(
    `discovery: ${LISTED} listed, ${STARTED} started in ${startMs.toFixed(0)} ms; ` +
      `longest stall ${sliced.toFixed(0)} ms (the same work in one block: ${oneBlock.toFixed(0)} ms); stop ${stopMs.toFixed(0)} ms`,
  );
  return [
    {
      name: `max stall, starting ${STARTED} of ${LISTED} listed accounts`,
      unit: 'ms',
      value: sliced,
      baseline: oneBlock,
      target: { maxValue: 100 },
    },
    { name: `stop with ${STARTED} accounts started`, unit: 'ms', value: stopMs, target: { maxValue: 3500 } },
  ];
}
