/**
 * A resource set that bursts and shrinks again (issue 15), on the exporter process as a user runs it: an API
 * that answers STEADY resources, then for two windows thousands more (past `limits.max_series_per_account`), then
 * STEADY again. After the burst's resources have been missing for `metrics.counter_retention`, /metrics must hold
 * the steady resources' series and nothing of the burst, their counters exact, and the process must have given
 * the memory back: RSS within 2x of its level before the burst.
 *
 * The exporter is a child process on the system clock (no clock can be injected across a process boundary), so
 * the one wait on time here is the retention itself, two seconds. RSS is read from /proc/PID/status (Linux; the
 * test skips elsewhere). The burst is ~15x the steady series, so memory that is not given back is ~5x the
 * margin: not a figure at the edge of the noise. `npm run bench` measures the same at 100k series
 * (bench/process-shrink.ts).
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { METRIC_NAMES } from '../../src/api/vocabulary.js';
import { MINUTE } from '../../src/clock.js';
import { metricValues } from '../../src/simulator/traffic.js';
import { TrafficModel } from '../../src/simulator/traffic-model.js';
import { cliTestFolder, servingUrl, startCli } from '../helpers/cli-process.js';
import { Scrape } from '../helpers/exposition.js';
import { type HostileApi, resourceJson, startHostileApi } from '../helpers/hostile-api.js';
import { waitFor } from '../helpers/stack.js';

const ACCOUNT = 'acme';
const STEADY = 300;
const BURST = 9000;
const SERIES_PER_RESOURCE = 69;
/** Room for 20x the steady series: most of the burst is admitted, the rest refused. */
const CAP = 20 * STEADY * SERIES_PER_RESOURCE;
const RETENTION_MS = 2000;
const BASE_WINDOWS = 3;
const BURST_WINDOWS = 2;
const AFTER_WINDOWS = 3;
const LINUX = existsSync('/proc/self/status');
/**
 * glibc's settings the Docker image runs the exporter with (its Dockerfile's ENV): without them glibc keeps a
 * further ~100 MB of freed buffers after a burst (see docs/operations.md, "Memory and the process benchmark"), which puts
 * the figure at 1.6-1.8x, too near the 2x line for a test on a loaded machine. The benchmark measures both.
 */
const IMAGE_MALLOC = Object.fromEntries(
  [
    ...readFileSync(join(import.meta.dirname, '..', '..', 'Dockerfile'), 'utf8').matchAll(
      /\b(MALLOC_\w+)=(\S+)/g,
    ),
  ].map((m) => [m[1]!, m[2]!]),
);

const dir = cliTestFolder('cli-shrink-');
let api: HostileApi | undefined;
afterEach(async () => {
  await api?.close();
  api = undefined;
});

function rssMb(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!m) throw new Error(`no VmRSS for ${pid}`);
  return Number(m[1]) / 1024;
}

/** Every metric of the documented shape, from the simulator's traffic model: ~69 series a resource. */
function resources(prefix: string, count: number): { json: Buffer; values: Map<string, number> } {
  const model = new TrafficModel(7);
  const t0 = Date.UTC(2026, 0, 1, 18, 0);
  const parts: string[] = [];
  const values = new Map<string, number>();
  for (let i = 0; i < count; i++) {
    const id = `${prefix}${String(i).padStart(5, '0')}`;
    const v = metricValues(model.totals(ACCOUNT, [id], t0, t0 + MINUTE), 60, METRIC_NAMES, 'object');
    values.set(id, v.edge_requests_total as number);
    parts.push(resourceJson(id, v as Record<string, number>));
  }
  return { json: Buffer.from(parts.join(',')), values };
}

describe.skipIf(!LINUX)('a resource set that bursts and shrinks again (exporter process)', () => {
  it('drops every series of the burst, keeps the steady counters exact, and gives the memory back', async () => {
    expect(Object.keys(IMAGE_MALLOC).sort()).toEqual(['MALLOC_ARENA_MAX', 'MALLOC_MMAP_THRESHOLD_']);
    const steady = resources('s', STEADY);
    const burst = resources('burst', BURST);
    // Answers are held until the test queues them: it decides which windows burst and when the next one goes.
    const queued: ('base' | 'burst')[] = [];
    const waiting: ((kind: 'base' | 'burst') => void)[] = [];
    const release = (kind: 'base' | 'burst', count: number) => {
      for (let i = 0; i < count; i++) {
        const next = waiting.shift();
        if (next) next(kind);
        else queued.push(kind);
      }
    };
    api = await startHostileApi(async () => {
      const kind = queued.shift() ?? (await new Promise<'base' | 'burst'>((r) => waiting.push(r)));
      return kind === 'burst' ? [steady.json, burst.json] : [steady.json];
    });
    const config = join(dir, 'config.yml');
    writeFileSync(
      config,
      stringify({
        api: {
          base_url: api.url,
          token: 'shrink-token',
          concurrency: 1,
          requests_per_second: 100,
          timeout: '2m',
        },
        // Every window below is a 10-minute catch-up window; one in flight at a time, in order.
        metrics: { window: '1m', delay: 0, lookback: '200m', counter_retention: `${RETENTION_MS / 1000}s` },
        limits: { max_series_per_account: CAP },
        accounts: [{ name: ACCOUNT }],
      }),
    );
    const p = startCli(
      ['--config', config, '--web.listen-address', '127.0.0.1:0', '--log.level', 'info'],
      IMAGE_MALLOC,
    );
    const base = await servingUrl(p);
    const pid = p.child.pid!;
    const scrape = () => Scrape.from(base);
    let counted = 0;
    let last = Scrape.of('');
    // The most RSS seen while windows were counted: a moment's sample may fall after a GC on a loaded machine.
    let rssPeak = 0;
    const windows = async (kind: 'base' | 'burst', count: number) => {
      release(kind, count);
      counted += count;
      await waitFor(
        async () => {
          rssPeak = Math.max(rssPeak, rssMb(pid));
          last = await scrape();
          return last.value('cdn_metrics_windows_total', { account: ACCOUNT }) === counted;
        },
        60_000,
        `${counted} counted windows`,
      );
      return last;
    };
    const resourceSeries = (s: Scrape) =>
      s.samples
        .filter((x) => x.labels.resource !== undefined)
        .map((x) => `${x.name}${JSON.stringify(x.labels)}`)
        .sort();

    const before = await windows('base', BASE_WINDOWS);
    const rssBefore = rssMb(pid);
    const seriesBefore = resourceSeries(before);
    expect(seriesBefore.length).toBeGreaterThan(STEADY * 60);

    rssPeak = 0;
    const atBurst = await windows('burst', BURST_WINDOWS);
    const rssBurst = Math.max(rssPeak, rssMb(pid));
    const burstSeries = resourceSeries(atBurst).length;
    // The burst reached the cap: most of it admitted, the rest folded into resource="__other__" (docs/metrics.md, "Bounded
    // series"), counted and not lost.
    expect(burstSeries).toBeGreaterThan(5 * seriesBefore.length);
    expect(burstSeries).toBeLessThanOrEqual(CAP + 100);
    expect(atBurst.value('cdn_folded_resources', { account: ACCOUNT })).toBeGreaterThan(0);
    const burstCounted = Date.now();

    // The burst's gauges go with the first answer without it; its counters once it has been missing for the
    // retention, at the first window counted after that.
    await windows('base', 1);
    await new Promise((r) => setTimeout(r, Math.max(0, burstCounted + RETENTION_MS + 200 - Date.now())));
    const after = await windows('base', AFTER_WINDOWS);

    // Nothing of the burst remains: the very series of before, no more, no fewer.
    expect(resourceSeries(after)).toEqual(seriesBefore);
    expect(after.samples.filter((x) => x.labels.resource?.startsWith('burst')).length).toBe(0);
    // The steady resources' counters are exact: every window counted once, the burst windows included.
    const total = BASE_WINDOWS + BURST_WINDOWS + 1 + AFTER_WINDOWS;
    for (const [id, requests] of steady.values) {
      expect(after.value('cdn_edge_requests_total', { account: ACCOUNT, resource: id })).toBe(
        requests * total,
      );
    }

    // The memory is given back a few seconds after the shrink (src/exporter/reclaim.ts waits for the /metrics
    // text to be rebuilt first); give it 90 s (a loaded machine).
    let rssAfter = rssMb(pid);
    await waitFor(
      () => {
        rssAfter = rssMb(pid);
        return rssAfter <= 2 * rssBefore;
      },
      90_000,
      `RSS within 2x of ${rssBefore.toFixed(0)} MB (at the burst ${rssBurst.toFixed(0)} MB, now ${rssAfter.toFixed(0)} MB)`,
    ).catch(() => undefined);
    console.log(
      `burst and shrink: RSS before ${rssBefore.toFixed(0)} MB, at the burst ${rssBurst.toFixed(0)} MB ` +
        `(${burstSeries} resource series), after ${rssAfter.toFixed(0)} MB`,
    );
    // The burst must have cost memory (else the test proves nothing), and that memory must be given back.
    expect(rssBurst).toBeGreaterThan(1.5 * rssBefore);
    expect(rssAfter).toBeLessThanOrEqual(2 * rssBefore);
  }, 300_000);
});
