/**
 * The exporter process writing settled windows through remote write (issue 32, item 6), measured from outside,
 * each figure beside the same process with `remote_write` off in the same run. For N resources:
 *
 * - the fake metrics API of ./process.ts (./process-fake-api.ts, a worker thread) answers every window with N
 *   resources, every metric (69 series a resource); a minimal receiver (./process-fake-receiver.ts, a worker
 *   thread) reads each write, counts its bytes and answers 204, decoding nothing;
 * - the exporter is started twice as `node dist/src/cli.js run --config FILE`, both times with a `state_file` in a
 *   fresh temporary folder, window 1m, delay 0 and a lookback of WINDOWS x 10 minutes: first with `remote_write`
 *   off, then with it on (pointed at the receiver, every other key at its default);
 * - phases: the first poll (every series created; with remote_write, the first settled window, each counter with
 *   its zero); the catch-up, until the cursor is within a minute of now and, with remote_write, the settled
 *   writer has had all of it acknowledged (the cursor at the head of `state.settled.json` reaches the traffic
 *   cursor), then QUIET_MS and a gzip scrape of /metrics (as Prometheus scrapes; the state file is saved before
 *   it answers); then one minute window of the exporter's steady life: from the next poll's request reaching the
 *   API to the same quiet and gzip scrape after it (its answer counted, its settled window written).
 * - figures: the process's CPU time over the minute window (utime + stime from /proc/<pid>/stat: every thread,
 *   the parse worker and libuv's pool included), less what the /healthz probes and landing page reads cost a
 *   quiet exporter over as long (measured in the STEADY_AFTER_MS after the window), so the phases' lengths do not
 *   count; VmRSS STEADY_AFTER_MS after the window (as ./process.ts reads steady RSS) and VmHWM then; the longest
 *   wait of a /healthz probe every 20 ms in each phase, scrapes left out (logged apart); the receiver's bytes in
 *   the minute window and the samples sent in it (the exporter's own
 *   `cdn_exporter_remote_write_samples_total{result="sent"}`, read off the scrapes); SIGTERM to exit. The log
 *   adds the catch-up's CPU and where the memory is (./smaps.ts, the exporter's own nodejs_* metrics).
 *
 * Baselines: the run with remote_write off for each figure of the process; the API's answer of a window (the
 * bytes the exporter reads) for the bytes it writes; JSON.parse of that answer, timed in this process, for the CPU
 * remote_write adds to a window; the series on /metrics for the samples a window writes.
 *
 * Targets are those documented for the process (issue 15, ./process.ts): no /healthz wait over 100 ms, SIGTERM to
 * exit within 5 s. The RSS targets of ./process.ts are for the exporter without remote_write; none is documented
 * for the memory, CPU or bytes remote_write adds, so those rows are figures beside their baseline.
 *
 * `node dist/bench/run.js 'remote_write 100k'` runs the 100k pair alone; the 1M pair is opt-in
 * (`processRemoteWrite1M`).
 */
import { spawn } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, readSync, rmSync, writeFileSync } from 'node:fs';
import { Agent } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Worker } from 'node:worker_threads';
import { gunzipSync } from 'node:zlib';
import { stringify } from 'yaml';
import { fullGc, median } from './measure.js';
import {
  closeWorker,
  cursorOf,
  fetchUrl,
  freePort,
  memoryLines,
  Prober,
  procMb,
  startWorker,
} from './process.js';
import type { BenchRow } from './report.js';
import { smapsGroups } from './smaps.js';

const ACCOUNT = 'bench';
const SERIES_PER_RESOURCE = 69;
const CLI = fileURLToPath(new URL('../src/cli.js', import.meta.url));
const FAKE_API = new URL('./process-fake-api.js', import.meta.url);
const RECEIVER = new URL('./process-fake-receiver.js', import.meta.url);
/** Quiet after the last answer (and, with remote_write, the last acknowledgement) before a phase's CPU is read. */
const QUIET_MS = 3000;
/** Steady RSS is read this long after the minute window's answer (./process.ts, STEADY_AFTER_MS: the same reasons). */
const STEADY_AFTER_MS = 18_000;
/** Give up on a phase after this long (the exporter is then reported as failed, not waited on forever). */
const PHASE_LIMIT_MS = 10 * 60_000;
/** The kernel's clock tick for /proc/<pid>/stat times (USER_HZ: 100 on Linux, whatever HZ the kernel runs at). */
const USER_HZ = 100;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface RemoteWriteBenchOptions {
  label: string;
  resources: number;
  /** Polls of the catch-up: the first creates the series, the others update them. */
  windows: number;
}

/** CPU time of the process so far (user + system, every thread), in ms. */
export function procCpuMs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // After the command name (which may hold spaces, in parentheses): field 3 on; utime and stime are 14 and 15.
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(f[11]) + Number(f[12])) * 1000) / USER_HZ;
  } catch {
    return Number.NaN;
  }
}

/** The acknowledged cursor of the account in `state.settled.json` (it comes first in the file), or undefined. */
function settledCursor(path: string): number | undefined {
  let fd: number | undefined;
  try {
    fd = openSync(path, 'r');
    const head = Buffer.alloc(512);
    const n = readSync(fd, head, 0, head.length, 0);
    const m = /"cursor":"([^"]+)"/.exec(head.subarray(0, n).toString());
    return m ? Date.parse(m[1]!) : undefined;
  } catch {
    return undefined;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** A sample's value on a scraped exposition (first line of `name{labels}`), or NaN. */
function sampleOf(text: Buffer, series: string): number {
  const at = text.indexOf(`\n${series} `);
  if (at < 0) return Number.NaN;
  const end = text.indexOf(10, at + 1);
  return Number(text.subarray(at + 1 + series.length + 1, end < 0 ? undefined : end).toString());
}

/** Series on an exposition: lines that are neither comments nor empty. */
function seriesLines(buf: Buffer): number {
  let n = 0;
  for (let i = buf.indexOf(10); i >= 0 && i + 1 < buf.length; i = buf.indexOf(10, i + 1))
    if (buf[i + 1] !== 35 && buf[i + 1] !== 10) n++;
  return n;
}

interface Counts {
  requests: number;
  bytes: number;
  refused: number;
}

interface ModeFigures {
  /** From the start until the cursor is within a minute of now (and, with remote_write, all of it acknowledged). */
  caughtUpMs: number;
  /** From the minute window's request to its scrape (the poll, its write, QUIET_MS). */
  windowMs: number;
  /** CPU of one minute window (its poll, its write, one gzip scrape), the probes' own cost taken out. */
  windowCpuMs: number;
  firstWait: number;
  catchUpWait: number;
  windowWait: number;
  steadyRss: number;
  peakRss: number;
  termMs: number;
  series: number;
  /** Per minute window. */
  wireBytes: number;
  samples: number;
}

async function runExporter(
  opts: RemoteWriteBenchOptions,
  remoteWrite: boolean,
  api: { url: string; worker: Worker },
  receiver: { url: string; worker: Worker },
  log: (l: string) => void,
): Promise<ModeFigures> {
  const mode = `${opts.label} remote_write ${remoteWrite ? 'on' : 'off'}`;
  const dir = mkdtempSync(join(tmpdir(), 'cdn-rw-bench-'));
  const stateFile = join(dir, 'state.json');
  const settledFile = join(dir, 'state.settled.json');
  const agent = new Agent({ keepAlive: true, maxSockets: 4 });
  let pid: number | undefined;
  let served = 0;
  let lastServedAt = performance.now();
  /** The exporter's CPU (and the time) when each of its requests reached the API. */
  const asks: { cpu: number; t: number }[] = [];
  const onApi = (m: { served?: number; asked?: number }) => {
    if (typeof m !== 'object') return;
    if (m.asked !== undefined)
      asks.push({ cpu: pid === undefined ? 0 : procCpuMs(pid), t: performance.now() });
    if (m.served !== undefined) {
      served++;
      lastServedAt = performance.now();
    }
  };
  api.worker.on('message', onApi);
  let got: Counts = { requests: 0, bytes: 0, refused: 0 };
  const onReceived = (m: Counts) => {
    if (typeof m === 'object' && m.requests !== undefined) got = m;
  };
  receiver.worker.on('message', onReceived);
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const configFile = join(dir, 'config.yml');
  writeFileSync(
    configFile,
    stringify({
      api: { base_url: api.url, token: 'bench-token', requests_per_second: 5, concurrency: 2 },
      metrics: { window: '1m', delay: 0, lookback: `${opts.windows * 10}m` },
      accounts: [{ name: ACCOUNT }],
      state_file: stateFile,
      ...(remoteWrite ? { remote_write: { url: `${receiver.url}/api/v1/write`, instance: 'bench' } } : {}),
    }),
  );
  const started = performance.now();
  const exporter = spawn(
    process.execPath,
    [CLI, 'run', '--config', configFile, '--web.listen-address', `127.0.0.1:${port}`, '--log.level', 'warn'],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  pid = exporter.pid!;
  const exporterPid = pid;
  let stderr = '';
  exporter.stderr?.on('data', (c: Buffer) => {
    stderr = (stderr + c.toString()).slice(-4000);
  });
  let exited: number | null | undefined;
  const exitedP = new Promise<void>((resolve) =>
    exporter.on('exit', (code) => {
      exited = code;
      resolve();
    }),
  );
  const prober = new Prober(`${base}/healthz`, agent, () => undefined);
  let cursor: number | undefined;
  /** Everything counted is also acknowledged by the receiver (always, with remote_write off). */
  const written = () =>
    !remoteWrite ||
    (cursor !== undefined && (settledCursor(settledFile) ?? Number.NEGATIVE_INFINITY) >= cursor);
  /** Waits for `done`, reading the cursor off the landing page meanwhile (`landing`: false, idle waits). */
  const waitFor = async (what: string, done: () => boolean, landing = true) => {
    const limit = performance.now() + PHASE_LIMIT_MS;
    while (!done()) {
      if (exited !== undefined)
        throw new Error(`${mode}: exporter exited (${exited}) while waiting for ${what}: ${stderr}`);
      if (performance.now() > limit)
        throw new Error(`${mode}: ${what} not reached in ${PHASE_LIMIT_MS / 1000} s`);
      await sleep(250);
      if (!landing) continue;
      try {
        cursor = cursorOf((await fetchUrl(`${base}/`, agent)).body.toString());
      } catch {
        // not listening yet
      }
    }
  };
  /**
   * Waits for a quiet exporter (QUIET_MS after the last answer, everything written), takes the probes' longest
   * wait, then scrapes gzip (as Prometheus does; the state file is saved before the answer leaves) and reads the
   * CPU. Again if a request came meanwhile, so the figures hold no part of a window the scrape did not show.
   */
  const quietScrape = async (what: string) => {
    let wait = 0;
    for (let i = 0; i < 10; i++) {
      await waitFor(what, () => performance.now() - lastServedAt >= QUIET_MS && written());
      const before = asks.length;
      wait = Math.max(wait, prober.take());
      const r = await fetchUrl(`${base}/metrics`, agent, { 'accept-encoding': 'gzip' });
      const cpu = procCpuMs(exporterPid);
      const t = performance.now();
      const scrapeWait = prober.take();
      if (r.status !== 200) throw new Error(`${mode}: /metrics answered ${r.status}`);
      if (asks.length !== before) continue;
      const text = gunzipSync(r.body);
      const sample = (result: string) =>
        remoteWrite ? sampleOf(text, `cdn_exporter_remote_write_samples_total{result="${result}"}`) : 0;
      return {
        wait,
        scrapeWait,
        scrapeMs: r.ms,
        cpu,
        t,
        asked: asks.length,
        served,
        cursor: cursor!,
        got,
        series: seriesLines(text),
        sent: sample('sent'),
        dropped: sample('dropped'),
        retried: sample('retried'),
        memory: memoryLines(text),
      };
    }
    throw new Error(`${mode}: ${what}: polls kept coming`);
  };
  try {
    prober.start();
    await waitFor('a cursor', () => cursor !== undefined);
    const startCursor = cursor!;
    await waitFor('the first poll', () => served >= 1 && cursor! > startCursor);
    const firstPollMs = performance.now() - started;
    const firstWait = prober.take();
    await waitFor(
      'the catch-up',
      () => cursor! >= Math.floor(Date.now() / 60_000) * 60_000 - 60_000 && written(),
    );
    const caughtUpMs = performance.now() - started;
    const a = await quietScrape('a quiet time after the catch-up');
    log(
      `${mode}: first poll counted after ${(firstPollMs / 1000).toFixed(1)} s, caught up${remoteWrite ? ' and written' : ''} ` +
        `after ${(caughtUpMs / 1000).toFixed(1)} s (${a.served} answers); then VmRSS ${procMb(exporterPid, 'VmRSS').toFixed(0)} MB, ` +
        `VmHWM ${procMb(exporterPid, 'VmHWM').toFixed(0)} MB (${smapsGroups(exporterPid)}); received ${a.got.requests} requests, ` +
        `${(a.got.bytes / 1e6).toFixed(1)} MB, ${a.sent} samples sent; first gzip scrape ${a.scrapeMs.toFixed(0)} ms, ` +
        `longest /healthz wait during it ${a.scrapeWait.toFixed(0)} ms; exporter's own view: ${a.memory}`,
    );
    // The minute window: from its request reaching the API to the scrape after it was written.
    await waitFor('the next minute poll', () => asks.length > a.asked, false);
    const from = asks[a.asked]!;
    await waitFor(
      'the minute poll',
      () => served > a.served && cursor! > a.cursor && performance.now() - lastServedAt >= QUIET_MS,
    );
    const b = await quietScrape('the minute window written');
    const windowMs = b.t - from.t;
    const windows = b.served - a.served;
    // What a quiet exporter spends on the probes (50 a second) and the landing page reads (4 a second), read from
    // the window's scrape to the steady RSS reading, is taken out of the window's CPU: it depends on how long each
    // phase takes, not on the window.
    await waitFor(
      'a quiet time after the minute window',
      () => performance.now() - lastServedAt >= STEADY_AFTER_MS && performance.now() - b.t >= STEADY_AFTER_MS,
    );
    const idleCpu = procCpuMs(exporterPid);
    const idleAt = performance.now();
    const steadyRss = procMb(exporterPid, 'VmRSS');
    const peakRss = procMb(exporterPid, 'VmHWM');
    const quietWait = prober.take();
    // A poll in that quiet time (the next minute's, when the window took long): the quiet time before the window.
    const idle =
      asks.length === b.asked
        ? { cpu: idleCpu - b.cpu, ms: idleAt - b.t, when: 'after the window' }
        : { cpu: from.cpu - a.cpu, ms: from.t - a.t, when: 'before the window' };
    const idleRate = idle.ms > 0 ? idle.cpu / idle.ms : 0;
    const windowCpuMs = (b.cpu - from.cpu - idleRate * windowMs) / windows;
    const wireBytes = (b.got.bytes - a.got.bytes) / windows;
    const requests = (b.got.requests - a.got.requests) / windows;
    const samples = (b.sent - a.sent) / windows;
    log(
      `${mode}: ${windows} minute window(s) (${new Date(a.cursor).toISOString()} to ${new Date(b.cursor).toISOString()}), ` +
        `${(windowMs / 1000).toFixed(1)} s from its request to its scrape: CPU ${((b.cpu - from.cpu) / windows).toFixed(0)} ms, ` +
        `${windowCpuMs.toFixed(0)} ms without the probes' (${(idleRate * 1000).toFixed(0)} ms a second when idle, over ${(idle.ms / 1000).toFixed(1)} s ${idle.when}); ` +
        `${b.series} series on /metrics, ${requests.toFixed(0)} requests, ${(wireBytes / 1e6).toFixed(2)} MB, ` +
        `${samples} samples a window; dropped ${b.dropped}, retried ${b.retried}, refused by the receiver ${b.got.refused}; ` +
        `gzip scrape ${b.scrapeMs.toFixed(0)} ms, longest /healthz wait during it ${b.scrapeWait.toFixed(0)} ms`,
    );
    log(
      `${mode}: catch-up CPU ${(a.cpu / 1000).toFixed(1)} s from the start (${a.served} answers, one scrape), ` +
        `${((a.cpu - idleRate * (a.t - started)) / 1000).toFixed(1)} s without the probes'`,
    );
    if (b.dropped > 0 || b.retried > 0 || b.got.refused > 0 || (!remoteWrite && b.got.bytes > 0))
      log(`${mode}: WARNING writes dropped, retried or refused, or written with remote_write off`);
    log(
      `${mode}: ${STEADY_AFTER_MS / 1000} s after the minute window VmRSS ${steadyRss.toFixed(0)} MB, VmHWM ${peakRss.toFixed(0)} MB ` +
        `(${smapsGroups(exporterPid)}), longest /healthz wait meanwhile ${quietWait.toFixed(0)} ms`,
    );
    await prober.stop();
    const termSent = performance.now();
    exporter.kill('SIGTERM');
    await Promise.race([exitedP, sleep(10_000)]);
    const termMs = exited === undefined ? Number.POSITIVE_INFINITY : performance.now() - termSent;
    log(`${mode}: SIGTERM to exit ${termMs.toFixed(0)} ms (exit ${JSON.stringify(exited)})`);
    return {
      caughtUpMs,
      windowMs,
      windowCpuMs,
      firstWait,
      catchUpWait: a.wait,
      windowWait: b.wait,
      steadyRss,
      peakRss,
      termMs,
      series: b.series,
      wireBytes,
      samples,
    };
  } finally {
    await prober.stop();
    if (exited === undefined) {
      exporter.kill('SIGKILL');
      await exitedP;
    }
    api.worker.off('message', onApi);
    receiver.worker.off('message', onReceived);
    agent.destroy();
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function remoteWriteBenchmark(
  opts: RemoteWriteBenchOptions,
  log: (l: string) => void,
): Promise<BenchRow[]> {
  const { worker: apiWorker, first } = await startWorker<{ url: string; bytes: number }>(FAKE_API, {
    resources: opts.resources,
    account: ACCOUNT,
  });
  const { worker: rxWorker, first: rx } = await startWorker<{ url: string }>(RECEIVER, undefined);
  const agent = new Agent({ keepAlive: false });
  try {
    // The baseline of the CPU remote_write adds: JSON.parse of a window's answer, as the API sends it.
    const end = Date.UTC(2026, 0, 1, 18, 1);
    const answer = await fetchUrl(
      `${first.url}/app/metrics/v1/resources?account=${ACCOUNT}&start=${end - 60_000}&end=${end}`,
      agent,
    );
    const text = answer.body.toString();
    const parses: number[] = [];
    for (let i = 0; i < 3; i++) {
      fullGc(2);
      const t = performance.now();
      JSON.parse(text);
      parses.push(performance.now() - t);
    }
    const jsonMs = median(parses);
    log(
      `${opts.label} remote_write: fake API of ${opts.resources} resources, ${(answer.body.length / 1e6).toFixed(1)} MB an answer, ` +
        `JSON.parse ${jsonMs.toFixed(0)} ms; receiver at ${rx.url}`,
    );
    const api = { url: first.url, worker: apiWorker };
    const receiver = { url: rx.url, worker: rxWorker };
    const off = await runExporter(opts, false, api, receiver, log);
    const on = await runExporter(opts, true, api, receiver, log);
    const l = `${opts.label} remote_write on`;
    const waitTarget = { target: { maxValue: 100 } };
    return [
      {
        name: `${l}: CPU of a minute window (poll, write, gzip scrape) vs off`,
        unit: 'ms',
        value: on.windowCpuMs,
        baseline: off.windowCpuMs,
      },
      {
        name: `${l}: CPU remote_write adds to a window (on - off) vs JSON.parse of its answer`,
        unit: 'ms',
        value: on.windowCpuMs - off.windowCpuMs,
        baseline: jsonMs,
      },
      {
        name: `${l}: a minute window, its request to its scrape (written) vs off`,
        unit: 'ms',
        value: on.windowMs,
        baseline: off.windowMs,
      },
      {
        name: `${l}: start to caught up (and written) vs off`,
        unit: 's',
        value: on.caughtUpMs / 1000,
        baseline: off.caughtUpMs / 1000,
      },
      { name: `${l}: steady RSS vs off`, unit: 'MB', value: on.steadyRss, baseline: off.steadyRss },
      { name: `${l}: peak RSS vs off`, unit: 'MB', value: on.peakRss, baseline: off.peakRss },
      {
        name: `${l}: longest /healthz wait, first poll (off as baseline)`,
        unit: 'ms',
        value: on.firstWait,
        baseline: off.firstWait,
        ...waitTarget,
      },
      {
        name: `${l}: longest /healthz wait, catch-up polls (off as baseline)`,
        unit: 'ms',
        value: on.catchUpWait,
        baseline: off.catchUpWait,
        ...waitTarget,
      },
      {
        name: `${l}: longest /healthz wait, minute window (off as baseline)`,
        unit: 'ms',
        value: on.windowWait,
        baseline: off.windowWait,
        ...waitTarget,
      },
      {
        name: `${l}: MB received per window vs the API's answer`,
        unit: 'MB',
        value: on.wireBytes / 1e6,
        baseline: answer.body.length / 1e6,
      },
      {
        name: `${l}: samples sent per window vs series on /metrics`,
        unit: 'samples',
        value: on.samples,
        baseline: on.series,
      },
      { name: `${l}: bytes on the wire per sample`, unit: 'B', value: on.wireBytes / on.samples },
      {
        name: `${l}: SIGTERM to exit (off as baseline)`,
        unit: 'ms',
        value: on.termMs,
        baseline: off.termMs,
        target: { maxValue: 5000 },
      },
    ];
  } finally {
    agent.destroy();
    await closeWorker(rxWorker);
    await closeWorker(apiWorker);
  }
}

/** 100k series (1,450 resources): the pair `npm run bench` runs. */
export function processRemoteWrite100k(log: (l: string) => void): Promise<BenchRow[]> {
  return remoteWriteBenchmark(
    { label: '100k', resources: Math.ceil(100_000 / SERIES_PER_RESOURCE), windows: 5 },
    log,
  );
}

/**
 * 1M series (15,000 resources, every metric): opt-in, run only when a word asked for names `1M` (`node
 * dist/bench/run.js 'remote_write 1M'`). The pair took 4.0 and 8.4 minutes here (2 cores, load average 3-5 and
 * 6-12): with remote_write on the exporter took 2.3 and 5.4 minutes to catch up and have every window written,
 * more than `npm run bench`'s share.
 */
export async function processRemoteWrite1M(
  log: (l: string) => void,
  asked: readonly string[],
): Promise<BenchRow[]> {
  if (!asked.some((w) => w.includes('1M'))) {
    log("remote_write 1M: opt-in, not run (ask for it: node dist/bench/run.js 'remote_write 1M')");
    return [];
  }
  return remoteWriteBenchmark({ label: '1M', resources: 15_000, windows: 6 }, log);
}
