/**
 * runBackfill (src/backfill/backfill.ts) without the process around it, on a fake clock, with made-up answers per
 * window through its narrow FetchWindow (no API), the real series, spool, progress file and, for remote write,
 * ./fake-writer.ts (the RemoteWriter interface alone). What it promises:
 * - `--output`: done, the `.om` assembled whole and the parts and progress removed; the counts it returns are
 *   those of the file; checkpoints every checkpointMs while it runs; interrupted, the progress and parts kept,
 *   and a run resumed from them writes the very file a run that went through writes, asking only the windows not
 *   done; a failure retrying cannot mend stops it with the reason, its progress kept; a 422 window skipped.
 * - `--remote-write`: done once the receiver acknowledged every batch, the writer closed with remote_write.timeout;
 *   batches refused for good counted; interrupted while the receiver still had windows, the progress is the state
 *   the receiver acknowledged, and the writer gets only the grace.
 * The whole command against the simulator: test/backfill/faults.test.ts, resume.test.ts, remote-write.test.ts.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type BackfillDeps, type BackfillOutputDeps, runBackfill } from '../../src/backfill/backfill.js';
import { OpenMetricsSpool } from '../../src/backfill/openmetrics.js';
import { ProgressFile, type RunProgress } from '../../src/backfill/progress-file.js';
import type { FetchWindow } from '../../src/backfill/reader.js';
import { MINUTE } from '../../src/clock.js';
import { ApiError } from '../../src/http/errors.js';
import { silentLogger } from '../../src/log.js';
import { WindowSeries } from '../../src/settled/window-series.js';
import type { TrafficResponse } from '../../src/traffic/response.js';
import { FakeClock, settle } from '../helpers/fake-clock.js';
import { perTest } from '../helpers/per-test.js';
import { waitFor } from '../helpers/stack.js';
import { FakeWriter } from './fake-writer.js';
import { readOm } from './om.js';
import { record } from './traffic-record.js';

const T0 = Date.parse('2026-10-01T00:00:00Z');
const ACCOUNTS = ['acme', 'globex'];
/** An hour per account in windows of 10 minutes: 12 windows in all. */
const WINDOWS = 12;
const WINDOW = 10 * MINUTE;

const per = perTest();
const folder = () => per.folder('cdn-run-backfill-');

/** The same answer for the same window every time: two resources, counts from the window's start. */
function answerOf(account: string, start: number): TrafficResponse {
  const k = (start - T0) / MINUTE + (account === 'acme' ? 0 : 1000);
  return {
    account,
    metrics: [],
    issues: [],
    unknownKeys: [],
    records: [record('1', 10 + k), record('2', 3 + (k % 7))],
  };
}

const freshRuns = (): RunProgress[] =>
  ACCOUNTS.map((account) => ({ account, start: T0, end: T0 + 60 * MINUTE, next: T0 }));

interface Harness {
  deps: BackfillDeps;
  clock: FakeClock;
  /** Windows asked per account, by start. */
  asked: Map<string, number[]>;
  stop: AbortController;
  progress: ProgressFile;
  out: string;
}

function harness(
  dir: string,
  over: Partial<BackfillDeps> & {
    /** The window `window` (the first is 0) of `account` fails each time it is asked, with a new `error()`. */
    failing?: { account: string; window: number; error: () => unknown };
  } = {},
  output?: BackfillOutputDeps,
): Harness {
  const clock = new FakeClock(T0 + 30 * 24 * 60 * MINUTE);
  const asked = new Map<string, number[]>();
  const stop = new AbortController();
  const out = join(dir, 'x.om');
  const progress = new ProgressFile(`${out}.progress`);
  let requests = 0;
  const { failing, ...rest } = over;
  const deps: BackfillDeps = {
    asked: 'mode=range window=10m',
    accounts: ACCOUNTS,
    runs: freshRuns(),
    windowMs: WINDOW,
    requestsBefore: 0,
    requests: () => requests,
    fetchFor:
      (account): FetchWindow =>
      async (start) => {
        requests++;
        asked.set(account, [...(asked.get(account) ?? []), start]);
        if (account === failing?.account && start === T0 + failing.window * WINDOW) throw failing.error();
        return answerOf(account, start);
      },
    readAhead: 2,
    series: new WindowSeries({
      breakdown: 'resource',
      metrics: [],
      resources: [],
      maxLabelLength: 1024,
      extraLabels: [
        ['job', 'cdn-exporter-settled'],
        ['instance', 'test-host'],
      ],
    }),
    retentionMs: 24 * 60 * MINUTE,
    output: output ?? {
      kind: 'file',
      spool: new OpenMetricsSpool(`${out}.parts`),
      path: out,
      maxBufferedBytes: 1 << 20,
    },
    progressFile: progress,
    checkpointMs: 1000,
    clock,
    log: silentLogger,
    random: () => 0.5,
    backoff: { baseMs: 1, capMs: 1 },
    signal: stop.signal,
    ...rest,
  };
  return { deps, clock, asked, stop, progress, out };
}

const askedCount = (h: Harness) => [...h.asked.values()].reduce((n, a) => n + a.length, 0);

describe('runBackfill --output', () => {
  it('assembles the .om once done, removes the parts and the progress, and counts what the file holds', async () => {
    const progress: [number, number, number][] = [];
    const h = harness(folder(), { requestsBefore: 5, onProgress: (d, t, r) => progress.push([d, t, r]) });
    const result = await runBackfill(h.deps);
    expect(result).toMatchObject({ status: 'done', windows: WINDOWS, skipped: 0, requests: 5 + WINDOWS });
    const text = readFileSync(h.out, 'utf8');
    const om = readOm(text);
    expect(om.wellFormed).toBe(true);
    expect(result.samples).toBe(om.samples.length);
    expect(result.bytes).toBe(statSync(h.out).size);
    expect(existsSync(`${h.out}.parts`)).toBe(false);
    expect(existsSync(h.progress.path)).toBe(false);
    // Every counter's last sample is at the range's end, with the labels every series ends with.
    const ends = new Set(om.samples.map((s) => s.timestampMs));
    expect(Math.max(...ends)).toBe(T0 + 60 * MINUTE);
    expect(
      om.samples.every((s) => s.labels.job === 'cdn-exporter-settled' && s.labels.instance === 'test-host'),
    ).toBe(true);
    expect(progress.at(-1)).toEqual([WINDOWS, WINDOWS, 5 + WINDOWS]);
    expect(progress.map(([d]) => d)).toEqual(Array.from({ length: WINDOWS }, (_, i) => i + 1));
  });

  it('saves its progress every checkpointMs while it runs', async () => {
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const h = harness(folder());
    const fetchFor = h.deps.fetchFor;
    // globex's third window waits until the test lets it go; acme runs through meanwhile.
    h.deps.fetchFor = (account) => {
      const f = fetchFor(account);
      return async (start, end) => {
        if (account === 'globex' && start === T0 + 2 * WINDOW) await held;
        return f(start, end);
      };
    };
    const running = runBackfill(h.deps);
    try {
      await settle();
      expect(existsSync(h.progress.path)).toBe(false);
      await h.clock.advance(1000);
      // The checkpoint writes the parts, then the progress (real file I/O).
      await waitFor(() => existsSync(h.progress.path), 10_000, 'the progress saved');
      const saved = await h.progress.load();
      expect(saved!.runs.map((r) => [r.account, (r.next - T0) / WINDOW, r.done?.windows])).toEqual([
        ['acme', 6, 6],
        ['globex', 2, 2],
      ]);
      expect(Object.keys(saved!.parts ?? {}).length).toBeGreaterThan(0);
    } finally {
      release();
    }
    expect((await running).status).toBe('done');
  });

  it('interrupted, keeps progress and parts; resumed from them, writes the same file asking only what was not done', async () => {
    const through = harness(folder());
    await runBackfill(through.deps);
    const whole = readFileSync(through.out);

    const dir = folder();
    let n = 0;
    const first = harness(dir, {
      onProgress: () => {
        if (++n === 5) first.stop.abort('SIGTERM');
      },
    });
    const stopped = await runBackfill(first.deps);
    expect(stopped.status).toBe('interrupted');
    expect(existsSync(first.out)).toBe(false);
    const loaded = (await first.progress.load())!;
    const done = loaded.runs.reduce((k, r) => k + (r.done?.windows ?? 0), 0);
    expect(done).toBeGreaterThanOrEqual(5);
    expect(done).toBeLessThan(WINDOWS);
    expect(loaded.requests).toBe(askedCount(first));

    const resumed = harness(dir, {
      runs: loaded.runs,
      requestsBefore: loaded.requests,
      output: {
        kind: 'file',
        spool: new OpenMetricsSpool(`${first.out}.parts`),
        path: first.out,
        maxBufferedBytes: 1 << 20,
        ...(loaded.parts ? { parts: loaded.parts } : {}),
      },
    });
    const result = await runBackfill(resumed.deps);
    expect(result).toMatchObject({ status: 'done', windows: WINDOWS });
    expect(askedCount(resumed)).toBe(WINDOWS - done);
    expect(readFileSync(first.out).equals(whole)).toBe(true);
  });

  it('stops on a failure retrying cannot mend, with the reason, its progress kept and no .om', async () => {
    const h = harness(folder(), {
      failing: {
        account: 'globex',
        window: 3,
        error: () =>
          new ApiError({ api: 'metrics', kind: 'auth', status: 401, description: 'token expired' }),
      },
    });
    const result = await runBackfill(h.deps);
    expect(result.status).toBe('stopped');
    expect(result.error).toBe(
      'account globex: the metrics API refuses the token (401: token expired); fix the credential, then run again with --resume',
    );
    expect(existsSync(h.out)).toBe(false);
    const saved = (await h.progress.load())!;
    const globex = saved.runs.find((r) => r.account === 'globex')!;
    expect(globex.next).toBeLessThanOrEqual(T0 + 3 * WINDOW);
  });

  it('skips a window the API rejects (422), counted, and writes nothing for its minutes', async () => {
    const h = harness(folder(), {
      failing: {
        account: 'acme',
        window: 2,
        error: () => new ApiError({ api: 'metrics', kind: 'invalid', status: 422, description: 'no' }),
      },
    });
    const result = await runBackfill(h.deps);
    expect(result).toMatchObject({ status: 'done', windows: WINDOWS, skipped: 1 });
    const acme = readOm(readFileSync(h.out, 'utf8')).samples.filter((s) => s.labels.account === 'acme');
    expect(acme.some((s) => s.timestampMs === T0 + 3 * WINDOW)).toBe(false);
    expect(acme.some((s) => s.timestampMs === T0 + 4 * WINDOW)).toBe(true);
  });
});

describe('runBackfill --remote-write', () => {
  const remote = (writer: FakeWriter): BackfillOutputDeps => ({
    kind: 'remote',
    writer,
    timeoutMs: 30_000,
    graceMs: 2500,
  });

  /** A run to a receiver with room for every window's batch, once it has offered them all. */
  async function offeredAll() {
    const writer = new FakeWriter(100);
    const h = harness(folder(), {}, remote(writer));
    const running = runBackfill(h.deps);
    await settle();
    expect(writer.offered).toHaveLength(WINDOWS);
    return { writer, h, running };
  }

  it('is done once the receiver acknowledged every batch; refused ones are counted; the writer gets the timeout', async () => {
    const { writer, h, running } = await offeredAll();
    writer.answer('dropped');
    for (let i = 1; i < WINDOWS; i++) writer.answer('sent');
    const result = await running;
    expect(result).toMatchObject({ status: 'done', windows: WINDOWS, droppedBatches: 1 });
    expect(writer.closedAt).toBe(h.clock.now() + 30_000);
    expect(existsSync(h.progress.path)).toBe(false);
    // One batch per window, each account's in time order.
    for (const account of ACCOUNTS)
      expect(
        writer.offered.filter((o) => o.batch.account === account).map((o) => (o.batch.end - T0) / WINDOW),
      ).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it('interrupted while the receiver still has windows: the progress is what it acknowledged; the writer gets the grace', async () => {
    const { writer, h, running } = await offeredAll();
    // The receiver takes the first three batches offered (each account's in time order).
    const taken = writer.offered.slice(0, 3).map((o) => o.batch.account);
    for (let i = 0; i < 3; i++) writer.answer('sent');
    const acked = (account: string) => taken.filter((a) => a === account).length;
    expect(acked('acme') + acked('globex')).toBe(3);
    h.stop.abort('SIGINT');
    const result = await running;
    expect(result.status).toBe('interrupted');
    expect(writer.closedAt).toBe(h.clock.now() + 2500);
    const saved = (await h.progress.load())!;
    expect(saved.runs.map((r) => [r.account, (r.next - T0) / WINDOW, r.done?.windows ?? 0])).toEqual(
      ACCOUNTS.map((a) => [a, acked(a), acked(a)]),
    );
    // With the running totals where the receiver stands, for the resume to go on from.
    for (const r of saved.runs) if (r.next > T0) expect(r.totals?.length).toBeGreaterThan(0);
  });
});
