/**
 * What the README promises of `cdn-exporter demo`, as a user sees it in Prometheus 2.53 run with
 * `--enable-feature=created-timestamp-zero-ingestion` (docs/operations.md): within minutes of the start, the
 * cdn-cost dashboard's commit panels have a series per account, and `increase()` over the last hour counts the
 * whole 45-minute lookback the demo walked before Prometheus' first scrape (the zero at each counter's start
 * timestamp is stored only when that start is within the hour Prometheus' head accepts: the demo's lookback must
 * stay under it).
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { cliTestFolder, servingUrl, startCli } from '../helpers/cli-process.js';
import { type Prometheus, startPrometheus } from '../helpers/prometheus.js';
import { waitFor } from '../helpers/stack.js';
import { findPrometheusTrixie } from '../helpers/tools.js';

const bin = findPrometheusTrixie();
cliTestFolder('cdn-demo-prom-');

/** The cost dashboard's commit panels' queries, as the dashboard file holds them (account variable: all). */
function commitQueries(): string[] {
  const text = readFileSync(new URL('../../grafana/dashboards/cdn-cost.json', import.meta.url), 'utf8');
  const exprs = [...text.matchAll(/"expr": "((?:[^"\\]|\\.)*)"/g)].map(
    (m) => JSON.parse(`"${m[1]}"`) as string,
  );
  return [
    ...new Set(
      exprs.filter((e) => /^max by \(account\) \(cdn_commit_\w+\{account=~"\$account"\}\)$/.test(e)),
    ),
  ].map((e) => e.replace('"$account"', '".*"'));
}

async function scalar(prom: Prometheus, expr: string, at?: number): Promise<number | undefined> {
  const r = await prom.query(expr, at);
  const v = r.result[0]?.value[1];
  return v === undefined ? undefined : Number(v);
}

describe.skipIf(!bin)('the demo in Prometheus 2.53 with created-timestamp zero ingestion', () => {
  it('fills the commit panels and counts the whole lookback in increase()', async () => {
    const demo = startCli(['demo', '--web.listen-address', '127.0.0.1:0']);
    const url = await servingUrl(demo, 60_000);
    const prom = await startPrometheus({
      bin: bin!,
      target: new URL(url).host,
      job: 'cdn-exporter',
      ruleFiles: [],
      interval: '1s',
      flags: ['--enable-feature=created-timestamp-zero-ingestion'],
    });
    try {
      // The lookback walked: the newest counted window ends within the delay and a window of now.
      await waitFor(
        async () => {
          const end = await scalar(prom, 'min(cdn_metrics_window_end_timestamp_seconds)');
          return end !== undefined && end * 1000 >= Date.now() - 4 * 60_000;
        },
        120_000,
        'the demo caught up with its lookback',
      );

      const queries = commitQueries();
      expect(queries.length, 'the dashboard has commit panels').toBeGreaterThanOrEqual(2);
      for (const q of queries) {
        const r = await prom.query(q);
        const accounts = r.result.map((s) => s.metric.account).sort();
        expect(accounts, q).toEqual(['acme', 'demo']);
      }

      // At a scrape's own timestamp, increase() has nothing to extrapolate at the end, and with the zero at the
      // start timestamp nothing at the start: it is the counter's value, lookback included.
      const at = await scalar(prom, 'max(timestamp(cdn_edge_requests_total))');
      expect(at).toBeDefined();
      const value = await scalar(prom, 'sum(cdn_edge_requests_total)', at);
      const increase = await scalar(prom, 'sum(increase(cdn_edge_requests_total[1h]))', at);
      expect(value).toBeGreaterThan(0);
      expect(increase! / value!).toBeCloseTo(1, 6);
    } finally {
      await prom.stop();
      demo.child.kill('SIGTERM');
      await demo.exited;
    }
  }, 240_000);
});
