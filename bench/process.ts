/**
 * The exporter process as a user runs it, measured from outside (issue 15). For N resources:
 *
 * - a fake metrics API (./process-fake-api.ts, a worker thread) answers every window with N resources, every
 *   metric (69 series a resource);
 * - the exporter is started as `node dist/src/cli.js run --config FILE` with window 1m, delay 0 and a lookback of
 *   WINDOWS minutes: its first poll creates every series, the next WINDOWS-1 polls (catch-up) update them;
 * - from this process: a GET /healthz every 20 ms (the longest wait, through the first poll and through the
 *   steady polls), VmRSS/VmHWM from /proc/<pid>/status (steady: between polls, STEADY_AFTER_MS after the last
 *   one; peak: at the end, scrapes included), then the plain and gzip /metrics scrape time (median of 5). The
 *   log adds where the memory is (./smaps.ts).
 *
 * Baselines, measured in the same run: prom-client holding the same counter and gauge series in a child process
 * (./process-promclient.ts: its RSS, and its render + gzip time against our gzip scrape), and a bare node:http
 * server in a worker thread sending the exporter's own plain body (./process-bare.ts) for the plain scrape.
 *
 * Targets (issue 15, at 1M series): peak RSS <= 450 MB, steady <= 300 MB, no /healthz wait over 100 ms, plain
 * scrape within 1.5x of the bare server, gzip scrape >= 300x faster than prom-client's render + gzip. The wait
 * and plain scrape targets hold at every size; the RSS and gzip targets are given at 1M only.
 *
 * Then the other formats (issue 23), which the store renders only once asked for: OpenMetrics (a counter's body
 * repeats its labels on the `_created` line) and protobuf, each scraped as above, with the bytes, the scrape time
 * beside the text format's and the bare server's (sending the protobuf body), and the RSS they add: the text
 * figures above are taken before either is asked for.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, get, type IncomingMessage } from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { gunzipSync } from 'node:zlib';
import { stringify } from 'yaml';
import { fullGc, median } from './measure.js';
import type { BenchRow } from './report.js';
import { smapsGroups } from './smaps.js';

const ACCOUNT = 'bench';
const SERIES_PER_RESOURCE = 69;
const PROBE_EVERY_MS = 20;
const CLI = fileURLToPath(new URL('../src/cli.js', import.meta.url));
const PROM_CHILD = fileURLToPath(new URL('./process-promclient.js', import.meta.url));
const FAKE_API = new URL('./process-fake-api.js', import.meta.url);
const BARE = new URL('./process-bare.js', import.meta.url);
/**
 * Scrapes timed per encoding (the median is the figure), after one that is not: Prometheus scrapes again and
 * again, and the first gzip scrape in a process's life compresses on the spot (from then on every refresh
 * compresses in the background, off the event loop). That first one is logged, not counted.
 */
const SCRAPES = 7;
const ACCEPT = {
  openmetrics: 'application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5',
  protobuf:
    'application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.5,application/openmetrics-text;version=1.0.0;q=0.4,text/plain;version=0.0.4;q=0.2',
};
/**
 * Steady RSS is read this long after the last answer (a poll of the next minute, if one comes meanwhile, starts
 * the wait again): polls come a minute apart, and the traffic parse worker is stopped after 5 s idle
 * (src/offloop/pool.ts), its pages released by V8 about 8 s later. The RSS 3 s after the catch-up is
 * logged too.
 */
const STEADY_AFTER_MS = 18_000;
const SOON_AFTER_MS = 3000;
/** Give up on a phase after this long (the exporter is then reported as failed, not waited on forever). */
const PHASE_LIMIT_MS = 10 * 60_000;

export interface ProcessBenchOptions {
  label: string;
  resources: number;
  /** Polls: the first creates the series, the others update them. */
  windows: number;
  /** The RSS and gzip targets apply (1M series; at 100k prom-client's render is too short to be 300x of). */
  rssTargets: boolean;
  /** Extra exporter flags/env, for experiments (`CDN_BENCH_NODE_OPTIONS` adds Node flags). */
  nodeOptions?: string[];
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export function procMb(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  try {
    const m = new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : Number.NaN;
  } catch {
    return Number.NaN;
  }
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const a = s.address();
      const port = typeof a === 'object' && a ? a.port : 0;
      s.close(() => resolve(port));
    });
  });
}

interface Fetched {
  status: number;
  body: Buffer;
  ms: number;
}

export function fetchUrl(url: string, agent: Agent, headers: Record<string, string> = {}): Promise<Fetched> {
  const t = performance.now();
  return new Promise((resolve, reject) => {
    const req = get(url, { agent, headers }, (res: IncomingMessage) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks), ms: performance.now() - t }),
      );
      res.on('error', reject);
    });
    req.on('error', reject);
    req.setTimeout(120_000, () => req.destroy(new Error(`${url}: no answer in 120 s`)));
  });
}

export function startWorker<T>(url: URL, data: unknown): Promise<{ worker: Worker; first: T }> {
  const worker = new Worker(url, { workerData: data });
  return new Promise((resolve, reject) => {
    worker.once('error', reject);
    worker.once('message', (first: T) => resolve({ worker, first }));
  });
}

export function closeWorker(worker: Worker): Promise<void> {
  return new Promise((resolve) => {
    const done = () => void worker.terminate().then(() => resolve());
    worker.on('message', (m) => m === 'closed' && done());
    worker.postMessage('close');
    setTimeout(done, 5000).unref();
  });
}

/** Where the memory is, as the exporter's prom-client default metrics report it (main thread only). */
export function memoryLines(text: Buffer): string {
  const want =
    /^(nodejs_heap_size_used_bytes|nodejs_heap_size_total_bytes|nodejs_external_memory_bytes|nodejs_heap_space_size_used_bytes\{space="(?:old|large_object|new)"\}|process_resident_memory_bytes) ([0-9.e+]+)/gm;
  const out: string[] = [];
  const head = text.subarray(0, Math.min(text.length, 64 << 10)).toString();
  for (let m = want.exec(head); m; m = want.exec(head))
    out.push(`${m[1]} ${(Number(m[2]) / 1e6).toFixed(0)} MB`);
  return out.join(', ');
}

/** The cursor the landing page shows for the account (epoch ms), or undefined before one is set. */
export function cursorOf(html: string): number | undefined {
  const m =
    /<td class="ts">(\d{4}-\d{2}-\d{2}T\d{2}:\d{2})/.exec(html) ??
    /<td class="ts">(\d{4}-\d{2}-\d{2} \d{2}:\d{2})/.exec(html);
  return m ? Date.parse(`${m[1]!.replace(' ', 'T')}:00Z`) : undefined;
}

/** GETs `url` every PROBE_EVERY_MS (one at a time): the longest wait of a phase is its figure. */
export class Prober {
  max = 0;
  /** When the longest probe of this phase started and ended (monotonic µs). */
  worst: [number, number] = [0, 0];
  private stopped = false;
  private loop: Promise<void> | undefined;
  samples = 0;
  constructor(
    private readonly url: string,
    private readonly agent: Agent,
    private readonly onTick: () => void,
  ) {}

  start(): void {
    this.loop = (async () => {
      while (!this.stopped) {
        const t = performance.now();
        const from = process.hrtime.bigint();
        try {
          const r = await fetchUrl(this.url, this.agent);
          if (r.status === 200) {
            if (r.ms > this.max) {
              // CLOCK_MONOTONIC, in µs: the clock of a V8 CPU profile of the exporter (--cpu-prof).
              this.worst = [Number(from / 1000n), Number(process.hrtime.bigint() / 1000n)];
            }
            this.max = Math.max(this.max, r.ms);
            this.samples++;
          }
        } catch {
          // Not listening yet, or a connection reset: no figure for this probe.
        }
        this.onTick();
        await sleep(Math.max(0, t + PROBE_EVERY_MS - performance.now()));
      }
    })();
  }

  /** Ends this phase's figure and starts the next. */
  take(): number {
    const m = this.max;
    this.max = 0;
    return m;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.loop;
  }
}

interface PromClientFigures {
  series: number;
  steadyRssMb: number;
  peakRssMb: number;
  renderMs: number;
  gzipMs: number;
  gzipBytes: number;
}

function runPromClient(file: string): Promise<PromClientFigures> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--max-old-space-size=8192', PROM_CHILD, file], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString();
    });
    child.on('error', reject);
    child.on('exit', (code) => {
      if (code !== 0) reject(new Error(`prom-client baseline exited with ${code}`));
      else resolve(JSON.parse(out) as PromClientFigures);
    });
  });
}

async function scrapeTimes(
  url: string,
  agent: Agent,
  headers: Record<string, string>,
): Promise<{ ms: number; body: Buffer; firstMs: number }> {
  const times: number[] = [];
  let body: Buffer = Buffer.alloc(0);
  const first = await fetchUrl(url, agent, headers);
  if (first.status !== 200) throw new Error(`${url}: status ${first.status}`);
  for (let i = 0; i < SCRAPES; i++) {
    // This process's own garbage (each plain scrape it reads is an 86 MB buffer at 1M) is collected before the
    // clock starts, so its GC pauses do not land in the exporter's (or the bare server's) figure.
    fullGc(1);
    const r = await fetchUrl(url, agent, headers);
    if (r.status !== 200) throw new Error(`${url}: status ${r.status}`);
    times.push(r.ms);
    body = r.body;
  }
  return { ms: median(times), body, firstMs: first.ms };
}

export async function processBenchmark(
  opts: ProcessBenchOptions,
  log: (l: string) => void,
): Promise<BenchRow[]> {
  const dir = mkdtempSync(join(tmpdir(), 'cdn-process-bench-'));
  const agent = new Agent({ keepAlive: true, maxSockets: 4 });
  const { worker: api, first } = await startWorker<{ url: string; bytes: number }>(FAKE_API, {
    resources: opts.resources,
    account: ACCOUNT,
  });
  let served = 0;
  let lastServedAt = performance.now();
  api.on('message', (m: { served?: number }) => {
    if (typeof m === 'object' && m.served !== undefined) {
      served = m.served;
      lastServedAt = performance.now();
    }
  });
  log(
    `${opts.label}: fake API of ${opts.resources} resources, ${(first.bytes / 1e6).toFixed(1)} MB an answer`,
  );
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const configFile = join(dir, 'config.yml');
  writeFileSync(
    configFile,
    stringify({
      api: { base_url: first.url, token: 'bench-token', requests_per_second: 5, concurrency: 2 },
      // Catch-up asks for windows of up to 10 minutes: `windows` polls of 10 minutes each.
      metrics: { window: '1m', delay: 0, lookback: `${opts.windows * 10}m` },
      accounts: [{ name: ACCOUNT }],
    }),
  );
  const nodeFlags = [
    ...(opts.nodeOptions ?? []),
    ...(process.env.CDN_BENCH_NODE_OPTIONS?.split(' ').filter(Boolean) ?? []),
  ];
  const started = performance.now();
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
      'warn',
    ],
    // CDN_BENCH_EXPORTER_STDOUT=FILE keeps the exporter's stdout (for example with --trace-gc in
    // CDN_BENCH_NODE_OPTIONS); its log goes to stderr.
    {
      stdio: [
        'ignore',
        process.env.CDN_BENCH_EXPORTER_STDOUT
          ? openSync(process.env.CDN_BENCH_EXPORTER_STDOUT, 'w')
          : 'ignore',
        'pipe',
      ],
    },
  );
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
  const pid = exporter.pid!;
  const prober = new Prober(`${base}/healthz`, agent, () => undefined);
  const rows: BenchRow[] = [];
  try {
    prober.start();
    // First poll: until the landing page shows a cursor past the first window.
    let cursor: number | undefined;
    const waitFor = async (what: string, done: () => boolean) => {
      const limit = performance.now() + PHASE_LIMIT_MS;
      while (!done()) {
        if (exited !== undefined)
          throw new Error(`exporter exited (${exited}) while waiting for ${what}: ${stderr}`);
        if (performance.now() > limit) throw new Error(`${what}: not reached in ${PHASE_LIMIT_MS / 1000} s`);
        await sleep(250);
        try {
          const page = await fetchUrl(`${base}/`, agent);
          cursor = cursorOf(page.body.toString());
        } catch {
          // not listening yet
        }
      }
    };
    await waitFor('a cursor', () => cursor !== undefined);
    const startCursor = cursor!;
    await waitFor('the first poll', () => served >= 1 && cursor! > startCursor);
    const firstMs = performance.now() - started;
    log(`${opts.label}: longest first-poll probe at monotonic ${prober.worst.join('-')} µs`);
    const firstWait = prober.take();
    const firstRss = procMb(pid, 'VmHWM');
    log(
      `${opts.label}: first poll counted after ${(firstMs / 1000).toFixed(1)} s, VmHWM ${firstRss.toFixed(0)} MB`,
    );
    await waitFor('the catch-up', () => cursor! >= Math.floor(Date.now() / 60_000) * 60_000 - 60_000);
    const caughtUpMs = performance.now() - started;
    const answers = served;
    // A few seconds of quiet after the last poll: the store's refresh and the collector settle.
    await sleep(SOON_AFTER_MS);
    log(`${opts.label}: longest steady probe at monotonic ${prober.worst.join('-')} µs`);
    const steadyWait = prober.take();
    log(
      `${opts.label}: ${SOON_AFTER_MS / 1000} s after the polls VmRSS ${procMb(pid, 'VmRSS').toFixed(0)} MB (VmHWM ${procMb(pid, 'VmHWM').toFixed(0)} MB): ${smapsGroups(pid)}`,
    );
    await waitFor('a quiet time after the polls', () => performance.now() - lastServedAt >= STEADY_AFTER_MS);
    // Not a row (the steady row is the polls' own): what a quiet exporter costs a probe, for the record.
    log(
      `${opts.label}: longest /healthz wait in the quiet time after that ${prober.take().toFixed(0)} ms, at monotonic ${prober.worst.join('-')} µs`,
    );
    const steadyRss = procMb(pid, 'VmRSS');
    log(
      `${opts.label}: ${STEADY_AFTER_MS / 1000} s after the last answer VmRSS ${steadyRss.toFixed(0)} MB (VmHWM ${procMb(pid, 'VmHWM').toFixed(0)} MB): ${smapsGroups(pid)}`,
    );
    log(
      `${opts.label}: caught up after ${(caughtUpMs / 1000).toFixed(1)} s (${answers} answers; ${served} by the steady reading)`,
    );
    await prober.stop();

    const plain = await scrapeTimes(`${base}/metrics`, agent, {});
    const gz = await scrapeTimes(`${base}/metrics`, agent, { 'accept-encoding': 'gzip' });
    const text = gunzipSync(gz.body);
    const seriesLines = (buf: Buffer) => {
      let n = 0;
      for (let i = buf.indexOf(10); i >= 0 && i + 1 < buf.length; i = buf.indexOf(10, i + 1))
        if (buf[i + 1] !== 35 && buf[i + 1] !== 10) n++;
      return n;
    };
    const series = seriesLines(plain.body);
    if (Math.abs(seriesLines(text) - series) > 1000)
      log(
        `${opts.label}: WARNING the last plain and gzip scrapes differ: ${series} and ${seriesLines(text)} series`,
      );
    log(`${opts.label}: exporter's own view: ${memoryLines(text)}`);
    const l0 = opts.label;
    const peakRss = procMb(pid, 'VmHWM');
    log(
      `${opts.label}: ${series} series, plain ${(plain.body.length / 1e6).toFixed(1)} MB in ${plain.ms.toFixed(0)} ms, ` +
        `gzip ${(gz.body.length / 1e6).toFixed(1)} MB in ${gz.ms.toFixed(1)} ms (the first, not counted: plain ${plain.firstMs.toFixed(0)} ms, gzip ${gz.firstMs.toFixed(0)} ms), VmHWM ${peakRss.toFixed(0)} MB`,
    );
    // The other formats, after the text figures (their bodies would be in those). Prometheus asks for gzip: a
    // format scraped only gzipped keeps its gzip, not its bodies. So protobuf gzipped first, as a Prometheus with
    // created-timestamp-zero-ingestion asks for it (RSS: the text bodies and that gzip), then OpenMetrics
    // gzipped (Prometheus' default), then protobuf plain (its bodies kept from then on), each RSS read after.
    const rss = () => ({ hwm: procMb(pid, 'VmHWM'), rss: procMb(pid, 'VmRSS') });
    const pbGz = await scrapeTimes(`${base}/metrics`, agent, {
      accept: ACCEPT.protobuf,
      'accept-encoding': 'gzip',
    });
    const pbRss = rss();
    const om = await scrapeTimes(`${base}/metrics`, agent, {
      accept: ACCEPT.openmetrics,
      'accept-encoding': 'gzip',
    });
    const omRss = rss();
    const pb = await scrapeTimes(`${base}/metrics`, agent, { accept: ACCEPT.protobuf });
    const allRss = rss();
    log(
      `${l0}: protobuf plain ${(pb.body.length / 1e6).toFixed(1)} MB in ${pb.ms.toFixed(0)} ms, gzip ${(pbGz.body.length / 1e6).toFixed(1)} MB in ${pbGz.ms.toFixed(1)} ms ` +
        `(the first, not counted: plain ${pb.firstMs.toFixed(0)} ms, gzip ${pbGz.firstMs.toFixed(0)} ms) ` +
        `beside text plain ${(plain.body.length / 1e6).toFixed(1)} MB in ${plain.ms.toFixed(0)} ms, gzip ${(gz.body.length / 1e6).toFixed(1)} MB in ${gz.ms.toFixed(1)} ms`,
    );
    log(
      `${l0}: OpenMetrics gzip ${(om.body.length / 1e6).toFixed(1)} MB in ${om.ms.toFixed(1)} ms (the first ${om.firstMs.toFixed(0)} ms)`,
    );
    log(
      `${l0}: VmRSS / VmHWM after protobuf gzip ${pbRss.rss.toFixed(0)} / ${pbRss.hwm.toFixed(0)} MB, ` +
        `then OpenMetrics gzip ${omRss.rss.toFixed(0)} / ${omRss.hwm.toFixed(0)} MB, then protobuf plain ${allRss.rss.toFixed(0)} / ${allRss.hwm.toFixed(0)} MB: ${smapsGroups(pid)}`,
    );
    // The shutdown bound (src/commands.ts, about 4.5 s) is measured here, not asserted in the tests: there a loaded
    // machine stretches it (test/helpers/cli-process.ts, EXIT_WAIT_MS).
    const termSent = performance.now();
    exporter.kill('SIGTERM');
    await Promise.race([exitedP, sleep(10_000)]);
    const termMs = exited === undefined ? Number.POSITIVE_INFINITY : performance.now() - termSent;
    log(`${opts.label}: SIGTERM to exit ${termMs.toFixed(0)} ms (exit ${JSON.stringify(exited)})`);

    const { worker: bare, first: bareUrl } = await startWorker<{ url: string }>(BARE, { body: plain.body });
    const bareScrape = await scrapeTimes(bareUrl.url, agent, {});
    await closeWorker(bare);
    const { worker: barePb, first: barePbUrl } = await startWorker<{ url: string }>(BARE, { body: pb.body });
    const barePbScrape = await scrapeTimes(barePbUrl.url, agent, {});
    await closeWorker(barePb);
    log(
      `${l0}: bare node:http: text ${bareScrape.ms.toFixed(0)} ms, protobuf ${barePbScrape.ms.toFixed(0)} ms`,
    );
    const file = join(dir, 'metrics.txt');
    writeFileSync(file, plain.body);
    const prom = await runPromClient(file);
    log(
      `${opts.label}: prom-client ${prom.series} series, render ${prom.renderMs.toFixed(0)} ms + gzip ${prom.gzipMs.toFixed(0)} ms, ` +
        `RSS ${prom.steadyRssMb.toFixed(0)} / peak ${prom.peakRssMb.toFixed(0)} MB`,
    );
    const l = opts.label;
    rows.push(
      {
        name: `${l}: peak RSS`,
        unit: 'MB',
        value: peakRss,
        baseline: prom.peakRssMb,
        ...(opts.rssTargets ? { target: { maxValue: 450 } } : {}),
      },
      {
        name: `${l}: steady RSS`,
        unit: 'MB',
        value: steadyRss,
        baseline: prom.steadyRssMb,
        ...(opts.rssTargets ? { target: { maxValue: 300 } } : {}),
      },
      {
        name: `${l}: longest /healthz wait, first poll`,
        unit: 'ms',
        value: firstWait,
        target: { maxValue: 100 },
      },
      {
        name: `${l}: longest /healthz wait, steady polls`,
        unit: 'ms',
        value: steadyWait,
        target: { maxValue: 100 },
      },
      { name: `${l}: SIGTERM to exit`, unit: 'ms', value: termMs, target: { maxValue: 5000 } },
      {
        name: `${l}: plain scrape vs bare node:http`,
        unit: 'ms',
        value: plain.ms,
        baseline: bareScrape.ms,
        target: { minRatio: 1 / 1.5 },
      },
      {
        name: `${l}: gzip scrape vs prom-client render+gzip`,
        unit: 'ms',
        value: gz.ms,
        baseline: prom.renderMs + prom.gzipMs,
        ...(opts.rssTargets ? { target: { minRatio: 300 } } : {}),
      },
      {
        name: `${l}: protobuf scrape vs bare node:http`,
        unit: 'ms',
        value: pb.ms,
        baseline: barePbScrape.ms,
        target: { minRatio: 1 / 1.5 },
      },
      { name: `${l}: protobuf scrape vs text scrape`, unit: 'ms', value: pb.ms, baseline: plain.ms },
      { name: `${l}: protobuf gzip scrape vs text gzip`, unit: 'ms', value: pbGz.ms, baseline: gz.ms },
      {
        name: `${l}: protobuf bytes vs text bytes`,
        unit: 'MB',
        value: pb.body.length / 1e6,
        baseline: plain.body.length / 1e6,
      },
      {
        name: `${l}: peak RSS, protobuf gzip scraped too`,
        unit: 'MB',
        value: pbRss.hwm,
        baseline: peakRss,
        ...(opts.rssTargets ? { target: { maxValue: 450 } } : {}),
      },
      {
        name: `${l}: RSS after protobuf gzip scrapes`,
        unit: 'MB',
        value: pbRss.rss,
        baseline: steadyRss,
        ...(opts.rssTargets ? { target: { maxValue: 300 } } : {}),
      },
      { name: `${l}: peak RSS, OpenMetrics gzip too`, unit: 'MB', value: omRss.hwm, baseline: peakRss },
      { name: `${l}: peak RSS, protobuf plain too`, unit: 'MB', value: allRss.hwm, baseline: peakRss },
    );
  } finally {
    await prober.stop();
    if (exited === undefined) {
      exporter.kill('SIGKILL');
      await exitedP;
    }
    await closeWorker(api);
    agent.destroy();
    rmSync(dir, { recursive: true, force: true });
  }
  return rows;
}

/** 100k series (1,450 resources): the quick run. */
export function process100k(log: (l: string) => void): Promise<BenchRow[]> {
  return processBenchmark(
    { label: '100k', resources: Math.ceil(100_000 / SERIES_PER_RESOURCE), windows: 5, rssTargets: false },
    log,
  );
}

/** 1M series (15,000 resources, every metric). */
export function process1M(log: (l: string) => void): Promise<BenchRow[]> {
  return processBenchmark({ label: '1M', resources: 15_000, windows: 6, rssTargets: true }, log);
}
