/**
 * The traffic dashboard on a real Prometheus 2.42 that both scrapes the exporter (job cdn-exporter) and receives its
 * settled windows through remote write (job cdn-exporter-settled, `--web.enable-remote-write-receiver`): the job
 * variable lists both, the scraped one first (Grafana's default with the variable's ascending sort), the settled
 * samples sit at window ends, and every traffic panel query of the generated dashboard, with the job variable set
 * to either job, parses and shows data (bar the allow-listed, each with its reason). Real time: Prometheus stamps
 * scrapes with its own clock.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SCRAPED_JOB, SETTLED_JOB } from '../../grafana/dashboards-src/traffic.js';
import { interpolate, loadDashboards } from '../helpers/dashboards.js';
import { perTest } from '../helpers/per-test.js';
import { freePort, type Prometheus, type QueryAnswer, startPrometheus } from '../helpers/prometheus.js';
import { waitFor } from '../helpers/stack.js';
import { findTool } from '../helpers/tools.js';

const started = perTest();
const prometheusBin = findTool('prometheus');

/** Grafana's built-in variables for a 30-minute time range and a 1 s scrape interval. */
const BUILTINS: Record<string, string> = {
  window_range: '20m',
  __rate_interval: '1m',
  __range: '30m',
  __range_s: '1800',
  __interval: '1s',
};

/** Panels that may show nothing here, per job, with the reason. */
const MAY_BE_EMPTY: Record<string, string> = {
  'Late traffic share per account':
    'revisit is off here (no revisits), and on the settled job it is empty by design (scraped job only)',
};

const hasData = (a: QueryAnswer) => a.result.some((s) => Number.isFinite(Number(s.value[1])));

describe.skipIf(!prometheusBin)(
  'the traffic dashboard on scraped and settled series in a real Prometheus',
  () => {
    it('lists both jobs, the scraped first; every traffic panel shows data on either', async () => {
      const port = await freePort();
      const dir = started.folder('cdn-dash-settled-');
      const stack = await started.stack({
        config: {
          // remote_write keeps its acknowledged cursors beside the state file.
          state_file: join(dir, 'state.json'),
          metrics: { window: '1m', delay: '0m', lookback: '30m' },
          accounts: [{ name: 'demo' }],
          remote_write: { url: `http://127.0.0.1:${port}/api/v1/write`, instance: 'test' },
        },
      });
      let prom: Prometheus | undefined;
      try {
        // The writer retries until the receiver is up; Prometheus listens where the exporter writes.
        prom = await startPrometheus({
          bin: prometheusBin!,
          target: new URL(stack.url).host,
          job: SCRAPED_JOB,
          ruleFiles: [],
          port,
          flags: ['--web.enable-remote-write-receiver'],
        });
        const p = prom;
        const traffic = loadDashboards().find((d) => d.uid === 'cdn-traffic')!;
        const run = (job: string) =>
          Promise.all(
            traffic.panels.map(async (q) => {
              const expr = interpolate(q.expr, { ...BUILTINS, job, account: '.*', resource: '.*' });
              return { q, expr, answer: await p.query(expr) };
            }),
          );
        const empty = async (job: string) => {
          const outcomes = await run(job);
          const failed = outcomes.filter((o) => o.answer.status !== 'success');
          expect(failed.map((o) => `${o.q.panel}: ${o.answer.error}\n${o.expr}`)).toEqual([]);
          const withData = new Set(outcomes.filter((o) => hasData(o.answer)).map((o) => o.q.panel));
          return [...new Set(outcomes.map((o) => o.q.panel))].filter(
            (t) => !withData.has(t) && !(t in MAY_BE_EMPTY),
          );
        };
        // Rates need the scraped counters to step while scraped (a window a minute) and two settled windows in range.
        await waitFor(
          async () => (await empty(SCRAPED_JOB)).length === 0 && (await empty(SETTLED_JOB)).length === 0,
          150_000,
          'every traffic panel to show data on both jobs',
        ).catch(async (err) => {
          throw new Error(
            `${err}\nscraped: ${(await empty(SCRAPED_JOB)).join(', ')}\nsettled: ${(await empty(SETTLED_JOB)).join(', ')}\n${p.logTail()}`,
          );
        });

        // The job variable's query, as Grafana sends it: both jobs, sorted, the scraped one first (the default).
        const job = traffic.variables.find((v) => v.name === 'job')!;
        const jobs = await p.labelValues(job.label, interpolate(job.match, BUILTINS));
        expect(jobs.values).toEqual([SCRAPED_JOB, SETTLED_JOB]);
        // The account variable narrowed to the settled job still lists the account.
        const account = traffic.variables.find((v) => v.name === 'account')!;
        const accounts = await p.labelValues(account.label, interpolate(account.match, { job: SETTLED_JOB }));
        expect(accounts.values).toEqual(['demo']);
        // Settled samples sit at window ends (whole minutes), where the windows happened; scraped ones at scrapes.
        const stamps = await p.query(`timestamp(cdn_edge_requests_total{job="${SETTLED_JOB}"})`);
        expect(stamps.result.length).toBeGreaterThan(0);
        for (const s of stamps.result) expect(Number(s.value[1]) % 60).toBe(0);
      } finally {
        await prom?.stop();
      }
    }, 200_000);
  },
);
