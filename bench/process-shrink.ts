/**
 * A resource set that grows and shrinks again (issue 15: "a resource set that shrinks again frees the memory:
 * RSS returns within 2x of its level before the burst"), measured on the exporter process as a user runs it.
 *
 * - A fake metrics API (./process-burst-api.ts, a worker thread) holds each request until this process says what
 *   it answers: N steady resources (`base`), or the same N plus many new ones (`burst`).
 * - The exporter is started as `node dist/src/cli.js run --config FILE` with window 1m, delay 0, one window in
 *   flight (api.concurrency 1), a lookback long enough for every window below to be a 10-minute catch-up window,
 *   `limits.max_series_per_account` at BURST_CAP times the steady series (so the burst runs into the cap, as a
 *   hostile API's would) and `metrics.counter_retention` RETENTION (a day by default; shortened so the burst's
 *   counters go within the run).
 * - Phases: BASE_WINDOWS of `base`, then a gzip scrape and VmRSS ("before"); BURST_WINDOWS of `burst`, scrape,
 *   VmRSS ("burst"); one `base` window (the burst's gauges go), a wait past the retention, AFTER_WINDOWS more
 *   `base` windows (the first of them deletes the burst's counters), scrape, VmRSS ("after").
 *
 * The target: RSS after the shrink within 2x of RSS before the burst (ratio before/after >= 0.5). The series on
 * /metrics after the shrink are counted beside those before it: every series of the burst must be gone.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Agent } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gunzipSync } from 'node:zlib';
import { stringify } from 'yaml';
import { closeWorker, cursorOf, fetchUrl, freePort, memoryLines, procMb, startWorker } from './process.js';
import type { AnswerKind } from './process-burst-api.js';
import type { BenchRow } from './report.js';

const ACCOUNT = 'bench';
const SERIES_PER_RESOURCE = 69;
const CLI = fileURLToPath(new URL('../src/cli.js', import.meta.url));
const BURST_API = new URL('./process-burst-api.js', import.meta.url);
const WINDOW_MS = 10 * 60_000;
const BASE_WINDOWS = 3;
const BURST_WINDOWS = 2;
const AFTER_WINDOWS = 3;
/** `metrics.counter_retention` of the run. */
const RETENTION_MS = 3000;
/** The per-account cap, in steady series: the burst answers more resources than fit under it. */
const BURST_CAP = 8;
/** Quiet after the last window of a phase before RSS is read: the store's refresh, the render, a GC or two. */
const SETTLE_MS = 3000;
const PHASE_LIMIT_MS = 5 * 60_000;
/** The exporter's wait between a shrink and giving the memory back (ShrinkReclaim's settleMs). */
const RECLAIM_MS = 5000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface ShrinkOptions {
  label: string;
  /** Steady resources. */
  resources: number;
  /** Resources the burst adds on top of them. */
  burst: number;
}

export interface ShrinkFigures {
  /** Series of resources on /metrics. */
  series: { before: number; burst: number; after: number };
  /** Lines of /metrics that name a burst resource, after the shrink: 0 when all of it went. */
  burstLinesAfter: number;
  rssMb: { before: number; burst: number; after: number; peak: number };
  refused: number;
}

/**
 * Where the RSS is, by kind of mapping (from /proc/PID/smaps): `[heap]` (glibc's main arena), anonymous mappings
 * of 64 MiB alignment (glibc's thread arenas reserve 64 MiB each), other anonymous ones (V8's heap pages, large
 * mmapped buffers), and files.
 */
function mappings(pid: number): string {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/smaps`, 'utf8');
  } catch {
    return '';
  }
  const kb: Record<string, number> = { brk: 0, arena64: 0, anon: 0, file: 0 };
  let kind = 'anon';
  for (const line of text.split('\n')) {
    const head = /^([0-9a-f]+)-([0-9a-f]+) \S+ \S+ \S+ \d+\s*(.*)$/.exec(line);
    if (head) {
      const size = Number.parseInt(head[2]!, 16) - Number.parseInt(head[1]!, 16);
      const name = head[3] ?? '';
      kind =
        name === '[heap]'
          ? 'brk'
          : name.startsWith('/')
            ? 'file'
            : name === '' && size === 64 << 20
              ? 'arena64'
              : name === '' && Number.parseInt(head[1]!, 16) % (64 << 20) === 0 && size < 64 << 20
                ? 'arena64'
                : 'anon';
      continue;
    }
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (rss) kb[kind]! += Number(rss[1]);
  }
  return Object.entries(kb)
    .map(([k, v]) => `${k} ${(v / 1024).toFixed(0)} MB`)
    .join(', ');
}

/** The account's `cdn_metrics_windows_total` in an exposition (0 before its first window). */
function windowsIn(text: string): number {
  const m = new RegExp(`^cdn_metrics_windows_total\\{account="${ACCOUNT}"\\} (\\S+)$`, 'm').exec(text);
  return m ? Number(m[1]) : 0;
}

/** Series of resources (lines with a `resource` label): the part a resource set grows and shrinks. */
function resourceSeries(text: string): number {
  let n = 0;
  for (const line of text.split('\n')) if (line.includes(' resource="') || line.includes(',resource="')) n++;
  return n;
}

/** Series of burst resources (ids from 1,000,000 on, see ./process-burst-api.ts). */
function burstSeries(text: string): number {
  let n = 0;
  for (const line of text.split('\n')) if (/[{,]resource="\d{7,}"/.test(line)) n++;
  return n;
}

export async function shrinkBenchmark(
  opts: ShrinkOptions,
  log: (l: string) => void,
): Promise<{ figures: ShrinkFigures; rows: BenchRow[] }> {
  const dir = mkdtempSync(join(tmpdir(), 'cdn-shrink-bench-'));
  const agent = new Agent({ keepAlive: true, maxSockets: 4 });
  const { worker: api, first } = await startWorker<{ url: string; baseBytes: number; burstBytes: number }>(
    BURST_API,
    { resources: opts.resources, burst: opts.burst, account: ACCOUNT },
  );
  let served = 0;
  api.on('message', (m: { served?: number }) => {
    if (typeof m === 'object' && m.served !== undefined) served = m.served;
  });
  const queue = (kind: AnswerKind, count: number) => api.postMessage({ queue: kind, count });
  log(
    `${opts.label}: fake API of ${opts.resources} resources (${(first.baseBytes / 1e6).toFixed(1)} MB), ` +
      `bursting to ${opts.resources + opts.burst} (${(first.burstBytes / 1e6).toFixed(1)} MB)`,
  );
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const configFile = join(dir, 'config.yml');
  const windows = BASE_WINDOWS + BURST_WINDOWS + 1 + AFTER_WINDOWS;
  writeFileSync(
    configFile,
    stringify({
      // Held answers: the deadline must outlast the waits between phases.
      api: {
        base_url: first.url,
        token: 'bench-token',
        requests_per_second: 50,
        concurrency: 1,
        timeout: '5m',
      },
      metrics: {
        window: '1m',
        delay: 0,
        lookback: `${(windows + 5) * 10}m`,
        counter_retention: `${RETENTION_MS / 1000}s`,
      },
      limits: { max_series_per_account: BURST_CAP * opts.resources * SERIES_PER_RESOURCE },
      accounts: [{ name: ACCOUNT }],
    }),
  );
  // As in ./process.ts: CDN_BENCH_NODE_OPTIONS adds Node flags to the exporter's, CDN_BENCH_EXPORTER_STDOUT=FILE
  // keeps its stdout (for --trace-gc).
  const nodeFlags = process.env.CDN_BENCH_NODE_OPTIONS?.split(' ').filter(Boolean) ?? [];
  const out = process.env.CDN_BENCH_EXPORTER_STDOUT;
  const exporter = spawn(
    process.execPath,
    [
      ...nodeFlags,
      CLI,
      'run',
      '--config',
      configFile,
      '--web.listen-address',
      `127.0.0.1:${port}`,
      '--log.level',
      'info',
    ],
    { stdio: ['ignore', out ? openSync(out, 'w') : 'ignore', 'pipe'] },
  );
  let stderr = '';
  /** The exporter's log line saying it gave memory back (src/exporter/reclaim.ts). */
  let reclaimed = '';
  exporter.stderr?.on('data', (c: Buffer) => {
    stderr = (stderr + c.toString()).slice(-4000);
    const line = stderr.split('\n').find((l) => l.includes('memory given back'));
    if (line) reclaimed = line;
  });
  let exited: number | null | undefined;
  const exitedP = new Promise<void>((resolve) =>
    exporter.on('exit', (code) => {
      exited = code;
      resolve();
    }),
  );
  const pid = exporter.pid!;
  let cursor: number | undefined;
  const waitFor = async (what: string, done: () => boolean) => {
    const limit = performance.now() + PHASE_LIMIT_MS;
    while (!done()) {
      if (exited !== undefined)
        throw new Error(`exporter exited (${exited}) while waiting for ${what}: ${stderr}`);
      if (performance.now() > limit) throw new Error(`${what}: not reached in ${PHASE_LIMIT_MS / 1000} s`);
      await sleep(100);
      try {
        cursor = cursorOf((await fetchUrl(`${base}/`, agent)).body.toString());
      } catch {
        // not listening yet
      }
    }
  };
  const scrape = async () => {
    const r = await fetchUrl(`${base}/metrics`, agent, { 'accept-encoding': 'gzip' });
    if (r.status !== 200) throw new Error(`/metrics: status ${r.status}`);
    return gunzipSync(r.body).toString();
  };
  try {
    const started = performance.now();
    await waitFor('a cursor', () => cursor !== undefined);
    const start = cursor!;
    let counted = 0;
    /** Answers `count` windows of `kind` and waits until the exporter has counted them. */
    const windowsOf = async (kind: AnswerKind, count: number) => {
      queue(kind, count);
      counted += count;
      await waitFor(`${counted} counted windows`, () => cursor! >= start + counted * WINDOW_MS);
    };
    const phase = async (name: string, settleMs = SETTLE_MS) => {
      // /metrics serves the last complete exposition: wait for the one that counts every window answered.
      let text = await scrape();
      const limit = performance.now() + PHASE_LIMIT_MS;
      while (windowsIn(text) < counted) {
        if (performance.now() > limit) throw new Error(`${name}: /metrics never showed ${counted} windows`);
        await sleep(250);
        text = await scrape();
      }
      await sleep(settleMs);
      text = await scrape();
      const rss = procMb(pid, 'VmRSS');
      log(
        `${opts.label}: ${name} at ${((performance.now() - started) / 1000).toFixed(1)} s: ${resourceSeries(text)} resource series, ` +
          `VmRSS ${rss.toFixed(0)} MB, VmHWM ${procMb(pid, 'VmHWM').toFixed(0)} MB (${mappings(pid)}); ${memoryLines(Buffer.from(text))}`,
      );
      return { text, rss };
    };

    await windowsOf('base', BASE_WINDOWS);
    const before = await phase('before the burst');
    await windowsOf('burst', BURST_WINDOWS);
    const burst = await phase('burst');
    const burstEnd = performance.now();
    await windowsOf('base', 1);
    // The burst's counters go at the first window counted `counter_retention` after they were last seen.
    await sleep(Math.max(0, burstEnd + RETENTION_MS + 500 - performance.now()));
    await windowsOf('base', AFTER_WINDOWS);
    // The exporter gives the memory back RECLAIM_MS after it sees the shrink (src/exporter/reclaim.ts).
    const after = await phase('after the shrink', RECLAIM_MS + SETTLE_MS);
    // CDN_BENCH_SHRINK_WATCH=SECONDS: keep reading RSS after the shrink (does it come down later by itself?).
    const watchS = Number(process.env.CDN_BENCH_SHRINK_WATCH ?? 0);
    for (let t = 0; t < watchS; t += 5) {
      await sleep(5000);
      log(`${opts.label}: +${t + 5} s after: VmRSS ${procMb(pid, 'VmRSS').toFixed(0)} MB; ${mappings(pid)}`);
    }
    const peak = procMb(pid, 'VmHWM');
    log(`${opts.label}: exporter: ${reclaimed || 'no "memory given back" log line'}`);

    const refusedMatch =
      /^cdn_series_refused_total\{[^}]*reason="max_series_per_account"[^}]*\} (\S+)$/m.exec(burst.text);
    const figures: ShrinkFigures = {
      series: {
        before: resourceSeries(before.text),
        burst: resourceSeries(burst.text),
        after: resourceSeries(after.text),
      },
      burstLinesAfter: burstSeries(after.text),
      rssMb: { before: before.rss, burst: burst.rss, after: after.rss, peak },
      refused: refusedMatch ? Number(refusedMatch[1]) : 0,
    };
    log(
      `${opts.label}: ${figures.refused} burst series refused by the cap, ${figures.burstLinesAfter} burst lines left ` +
        `after the shrink, ${served} answers, ${((performance.now() - started) / 1000).toFixed(1)} s`,
    );
    const l = opts.label;
    const rows: BenchRow[] = [
      { name: `${l}: RSS at the burst vs before`, unit: 'MB', value: burst.rss, baseline: before.rss },
      {
        name: `${l}: RSS after the shrink vs before (within 2x)`,
        unit: 'MB',
        value: after.rss,
        baseline: before.rss,
        target: { minRatio: 0.5 },
      },
      {
        // Every series of the burst gone: as many series as before it (ratio 1; fewer is not expected either).
        name: `${l}: resource series after the shrink vs before`,
        unit: 'series',
        value: figures.series.after,
        baseline: figures.series.before,
        target: { minRatio: 1 },
      },
    ];
    return { figures, rows };
  } finally {
    if (exited === undefined) {
      exporter.kill('SIGKILL');
      await exitedP;
    }
    await closeWorker(api);
    agent.destroy();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** ~100k series (1,450 resources) bursting to ~10x for two windows, then back. */
export async function processShrink(log: (l: string) => void): Promise<BenchRow[]> {
  const resources = Math.ceil(100_000 / SERIES_PER_RESOURCE);
  const { rows } = await shrinkBenchmark(
    { label: 'burst and shrink, 100k', resources, burst: 9 * resources },
    log,
  );
  return rows;
}
