/**
 * The exporter's HTTP app for bench/hostile.ts: createApp with its self metrics (process defaults included) and a
 * fixed store of ~1000 series (~60 KB), logging to `log`.
 */
import { gzipSync } from 'node:zlib';
import type { Express } from 'express';
import { Registry } from 'prom-client';
import type { Logger } from '../src/log.js';
import { createApp } from '../src/server/app.js';
import { createSelfMetrics } from '../src/server/self-metrics.js';
import type { Exposition } from '../src/store/types.js';

export function appFor(log: Logger): Express {
  const registry = new Registry();
  createSelfMetrics(registry, { version: 'bench', apis: ['metrics'] });
  const lines = ['# HELP cdn_bench_requests_total Requests.', '# TYPE cdn_bench_requests_total counter'];
  for (let i = 0; i < 1000; i++)
    lines.push(`cdn_bench_requests_total{account="acme",resource="${i}"} ${i * 7}`);
  const body = Buffer.from(`${lines.join('\n')}\n`);
  const gz = gzipSync(body);
  const store: Exposition = {
    render: () => body,
    hold: () => ({ chunks: [body], release: () => {} }),
    renderGzip: () => gz,
    familyNames: () => ['cdn_bench_requests'],
  };
  return createApp({
    registry,
    store,
    status: () => ({
      ready: true,
      version: 'bench',
      startedAt: new Date(),
      accounts: [],
      problems: { dvr: [], recordings: [] },
    }),
    log,
  });
}
