/**
 * A real Prometheus scrapes the app: its default Accept asks for OpenMetrics and its Go client sends
 * Accept-Encoding: gzip, so this checks the converted OpenMetrics text and the multi-member gzip body with
 * the parser users run, not ours.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/log.js';
import { settle } from '../helpers/fake-clock.js';
import { exporterApp } from '../helpers/fake-exposition.js';
import { findTool } from '../helpers/tools.js';
import { listen, type Running } from './http.js';

const prometheus = findTool('prometheus');

/** A port that was free a moment ago (Prometheus cannot report the port it picked for :0). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const addr = s.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      s.close(() => resolve(port));
    });
  });
}

interface Target {
  health: string;
  lastError: string;
}

describe.skipIf(!prometheus)('scraped by Prometheus', () => {
  let app: Running;
  let dir: string;
  let proc: ChildProcess | undefined;
  let promUrl: string;
  const stderr: string[] = [];

  beforeAll(async () => {
    app = await listen(exporterApp(silentLogger));
    dir = mkdtempSync(join(tmpdir(), 'cdn-exporter-prom-'));
    writeFileSync(
      join(dir, 'prometheus.yml'),
      `global: {scrape_interval: 1s, scrape_timeout: 1s}\nscrape_configs:\n  - job_name: exporter\n    static_configs: [{targets: ['127.0.0.1:${app.port}']}]\n`,
    );
    const port = await freePort();
    promUrl = `http://127.0.0.1:${port}`;
    proc = spawn(
      prometheus!,
      [
        `--config.file=${join(dir, 'prometheus.yml')}`,
        `--storage.tsdb.path=${join(dir, 'data')}`,
        `--web.listen-address=127.0.0.1:${port}`,
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    proc.stderr?.on('data', (c: Buffer) => stderr.push(c.toString()));
  });

  afterAll(async () => {
    if (proc && proc.exitCode === null) {
      const exited = new Promise((resolve) => proc?.once('exit', resolve));
      proc.kill('SIGTERM');
      await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 5000))]);
      if (proc.exitCode === null) proc.kill('SIGKILL');
    }
    await app?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  async function query(expr: string): Promise<{ metric: Record<string, string>; value: [number, string] }[]> {
    const res = await fetch(`${promUrl}/api/v1/query?query=${encodeURIComponent(expr)}`);
    const body = (await res.json()) as {
      data: { result: { metric: Record<string, string>; value: [number, string] }[] };
    };
    return body.data.result;
  }

  it('the target is up and the store and registry series arrive under their names', async () => {
    // Bounded: at most ~25 s of polling Prometheus' API, which needs a couple of scrape intervals.
    let target: Target | undefined;
    for (let i = 0; i < 100; i++) {
      try {
        const res = await fetch(`${promUrl}/api/v1/targets`);
        const body = (await res.json()) as { data: { activeTargets: Target[] } };
        target = body.data.activeTargets[0];
        if (target && target.health !== 'unknown' && (await query('cdn_edge_requests_total')).length > 0)
          break;
      } catch {
        // Prometheus not listening yet.
      }
      await new Promise((resolve) => setTimeout(resolve, 250));
      await settle();
    }
    expect(target, stderr.join('')).toBeDefined();
    expect(target?.lastError).toBe('');
    expect(target?.health).toBe('up');
    const edge = await query('cdn_edge_requests_total{resource="101"}');
    expect(edge.map((r) => r.value[1])).toEqual(['1234']);
    expect((await query('cdn_exporter_build_info')).map((r) => r.metric.version)).toEqual(['0.1.0']);
    expect(await query('process_cpu_seconds_total')).toHaveLength(1);
    expect(await query('cdn_exporter_parse_errors_total')).toHaveLength(1);
  });
});
