/**
 * Golden exposition: a fixed world (seed, config, start time) polled on one FakeClock must render /metrics byte for
 * byte as test/golden/metrics.prom (text 0.0.4) and test/golden/metrics.openmetrics.txt (OpenMetrics 1.0.0), and
 * the text must pass `promtool check metrics` (which reads only the text format).
 *
 * Update after an intended change: `UPDATE_GOLDEN=1 npx vitest run test/scenarios/golden.test.ts`, then review the
 * diff of test/golden/ like code.
 *
 * Determinism. The simulator and the exporter share one FakeClock, and the clock moves only while no request is
 * outstanding, so every answer and every timestamp is a function of fake time. What is left to real time is the
 * order in which concurrent answers arrive (it decides the order in which series are created, which is the order
 * they are rendered in): a sequencing proxy between the exporter and the simulator holds every request until the
 * exporter has sent all it is going to send, then lets them through one at a time in a fixed order (method and
 * URL, token-less), each only after the previous answer has been consumed.
 *
 * Normalisation, the only one (see `normalise`): `cdn_api_request_duration_seconds` measures wall time, so its
 * finite buckets and its `_sum` are written as 0. Its series, its `+Inf` bucket and its `_count` (the number of
 * requests, which is deterministic) are kept. The result is still a valid histogram (0 <= ... <= count).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import {
  createServer,
  request as httpRequest,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Exporter } from '../../src/exporter/exporter.js';
import { startSimulator } from '../../src/simulator/server.js';
import { parseExposition, type Sample, Scrape } from '../helpers/exposition.js';
import { FakeClock, settle } from '../helpers/fake-clock.js';
import { decodeProtobuf, protobufToText } from '../helpers/protobuf.js';
import { type Stack, startStack } from '../helpers/stack.js';
import { findTool } from '../helpers/tools.js';

const GOLDEN_DIR = fileURLToPath(new URL('../golden/', import.meta.url));
const TEXT_GOLDEN = join(GOLDEN_DIR, 'metrics.prom');
const OPENMETRICS_GOLDEN = join(GOLDEN_DIR, 'metrics.openmetrics.txt');
const UPDATE = process.env.UPDATE_GOLDEN === '1';

const START = Date.UTC(2026, 2, 2, 12, 0, 0);
const SEED = 42;
const TOKENS = ['demo-token', 'acme-token'];
/** How far past the start the clock is driven: catch-up of the lookback, then one steady-state window. */
const DRIVE_MS = 6 * 60_000;
const STEP_MS = 1000;
const WINDOW_MS = 5 * 60_000;
const DELAY_MS = 2 * 60_000;

const DURATION = 'cdn_api_request_duration_seconds';
const VALUE_AT_END = /^(\S+(?:\{.*\})?) (\S+)$/;

/** The one documented normalisation: wall-time samples of the request duration histogram become 0. */
function normalise(text: string): string {
  return text
    .split('\n')
    .map((line) => {
      if (!line.startsWith(`${DURATION}_`)) return line;
      const m = VALUE_AT_END.exec(line);
      if (!m) return line;
      const series = m[1]!;
      const wallTime =
        series.startsWith(`${DURATION}_sum`) ||
        (series.startsWith(`${DURATION}_bucket`) && !series.includes('le="+Inf"'));
      return wallTime ? `${series} 0` : line;
    })
    .join('\n');
}

interface Held {
  key: string;
  release: () => void;
}

/**
 * A loopback proxy that holds requests until `releaseOne` lets the one with the smallest key through. Forwarding is
 * byte-for-byte (method, URL, headers, body; status, headers, body).
 */
class Sequencer {
  readonly held: Held[] = [];
  private server: Server | undefined;
  url = '';

  async start(target: string): Promise<void> {
    const to = new URL(target);
    this.server = createServer((req: IncomingMessage, res: ServerResponse) => {
      const key = `${req.method} ${req.url}`;
      this.held.push({
        key,
        release: () => {
          const up = httpRequest(
            {
              host: to.hostname,
              port: to.port,
              method: req.method,
              path: req.url,
              headers: { ...req.headers, host: to.host, connection: 'close' },
            },
            (answer) => {
              res.writeHead(answer.statusCode ?? 502, answer.headers);
              answer.pipe(res);
            },
          );
          up.on('error', () => res.destroy());
          req.pipe(up);
        },
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  releaseOne(): void {
    this.held.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    this.held.shift()?.release();
  }

  async close(): Promise<void> {
    for (const h of this.held.splice(0)) h.release();
    const server = this.server;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

async function queueLength(exporter: Exporter): Promise<number> {
  return (await exporter.self.queueLength.get()).values[0]?.value ?? 0;
}

/**
 * Lets every request the exporter has in mind through, one at a time, until none is waiting, running or about to
 * be sent. Bounded in real time.
 */
async function drain(exporter: Exporter, seq: Sequencer, timeoutMs = 10_000): Promise<number> {
  const until = Date.now() + timeoutMs;
  let released = 0;
  for (;;) {
    await settle();
    const outstanding = await queueLength(exporter);
    if (Date.now() > until)
      throw new Error(`drain: ${outstanding} requests outstanding, ${seq.held.length} held`);
    if (outstanding === 0 && seq.held.length === 0) {
      // Quiet twice in a row: nothing was scheduled by the last answer's continuations.
      await settle();
      if ((await queueLength(exporter)) === 0 && seq.held.length === 0) return released;
      continue;
    }
    if (outstanding === seq.held.length) {
      seq.releaseOne();
      released++;
    } else {
      await new Promise((r) => setTimeout(r, 2));
    }
  }
}

interface Run {
  text: string;
  openMetrics: string;
  protobuf: Buffer;
  requests: number;
}

/** What Prometheus 2.53 asks for with --enable-feature=created-timestamp-zero-ingestion. */
const PROTOBUF_ACCEPT =
  'application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.5,application/openmetrics-text;version=1.0.0;q=0.4,text/plain;version=0.0.4;q=0.2,*/*;q=0.1';

/** One complete run of the fixed scenario; everything it starts it stops. */
async function goldenRun(): Promise<Run> {
  const clock = new FakeClock(START);
  const sim = await startSimulator({ seed: SEED, clock });
  const seq = new Sequencer();
  let stack: Stack | undefined;
  try {
    await seq.start(sim.url);
    stack = await startStack({
      clock,
      simulator: sim,
      config: {
        // Concurrency above the most requests ever due at once: no request waits in the gate for another to
        // finish, so "every request the exporter has started has reached the proxy" is observable.
        api: { base_url: seq.url, requests_per_second: 100, concurrency: 16 },
        metrics: { breakdown: 'resource', window: '5m', delay: '2m', lookback: '30m' },
        dvr: { interval: '1m' },
        recordings: { interval: '1m' },
        accounts: [
          { name: 'demo', dvr_streams: ['live/main', 'news/hd', 'sport/4k'], recordings: true },
          { name: 'acme', token: 'acme-token', dvr_streams: ['tv/channel1'], recordings: true },
        ],
      },
    });
    let requests = await drain(stack.exporter, seq);
    for (let t = 0; t < DRIVE_MS; t += STEP_MS) {
      await clock.advance(STEP_MS);
      requests += await drain(stack.exporter, seq);
    }
    const text = await stack.text();
    const om = await fetch(`${stack.url}/metrics`, {
      headers: { accept: 'application/openmetrics-text; version=1.0.0' },
    });
    expect(om.headers.get('content-type')).toMatch(/^application\/openmetrics-text/);
    const pb = await fetch(`${stack.url}/metrics`, { headers: { accept: PROTOBUF_ACCEPT } });
    expect(pb.headers.get('content-type')).toMatch(
      /^application\/vnd\.google\.protobuf; proto=io\.prometheus\.client\.MetricFamily; encoding=delimited/,
    );
    const protobuf = Buffer.from(await pb.arrayBuffer());
    return { text, openMetrics: await om.text(), protobuf, requests };
  } finally {
    await stack?.stop();
    await seq.close();
    await sim.close();
  }
}

function compareWithGolden(actual: string, file: string): void {
  if (UPDATE) {
    writeFileSync(file, actual);
    return;
  }
  expect(existsSync(file), `${file} is missing: run with UPDATE_GOLDEN=1 to create it`).toBe(true);
  expect(actual).toBe(readFileSync(file, 'utf8'));
}

function promtoolProblems(promtool: string, text: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'golden-'));
  try {
    const file = join(dir, 'metrics.prom');
    writeFileSync(file, text);
    // `check metrics` reads stdin, prints its findings and exits 3 when there are lint problems.
    return execFileSync('sh', ['-c', `"${promtool}" check metrics < "${file}" 2>&1 || true`], {
      encoding: 'utf8',
    }).trim();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('golden exposition', () => {
  let first: Run;
  beforeAll(async () => {
    first = await goldenRun();
  }, 60_000);

  it('renders the fixed scenario as test/golden/metrics.prom', () => {
    const text = normalise(first.text);
    // What the golden file must show before it is worth comparing with: both accounts, all three APIs.
    const names = new Set(parseExposition(text).map((s) => s.name));
    for (const name of [
      'cdn_resource_info',
      'cdn_edge_responses_total',
      'cdn_origin_requests_total',
      'cdn_metrics_window_end_timestamp_seconds',
      'cdn_dvr_coverage_ratio',
      'cdn_recording_status',
      'cdn_up',
      `${DURATION}_count`,
    ]) {
      expect(names.has(name), name).toBe(true);
    }
    for (const account of ['demo', 'acme']) {
      for (const api of ['metrics', 'dvr-net', 'recorder-cloud'])
        expect(text).toContain(`cdn_up{api="${api}",account="${account}"} 1`);
    }
    // Catch-up is done: the cursor is less than one window (5m) behind the horizon (now - delay).
    const horizon = (START + DRIVE_MS - DELAY_MS) / 1000;
    const scrape = Scrape.of(text);
    for (const account of ['demo', 'acme']) {
      const end = scrape.value('cdn_metrics_window_end_timestamp_seconds', { account }) ?? 0;
      expect(end).toBeLessThanOrEqual(horizon);
      expect(horizon - end).toBeLessThan(WINDOW_MS / 1000);
    }
    expect(text).not.toMatch(/^(process_|nodejs_)/m);
    for (const token of TOKENS) expect(text).not.toContain(token);
    compareWithGolden(text, TEXT_GOLDEN);
  });

  it('renders the same scenario as test/golden/metrics.openmetrics.txt', () => {
    const text = normalise(first.openMetrics);
    expect(text.endsWith('# EOF\n')).toBe(true);
    for (const token of TOKENS) expect(text).not.toContain(token);
    compareWithGolden(text, OPENMETRICS_GOLDEN);
  });

  it('serves the same samples in protobuf, each counter and histogram with the start of its OpenMetrics _created sample', () => {
    const families = decodeProtobuf(first.protobuf);
    const key = (s: Sample) => `${s.name}${JSON.stringify(Object.entries(s.labels).sort())}`;
    const fromText = new Map(parseExposition(first.text).map((s) => [key(s), s.value]));
    const fromProtobuf = new Map(parseExposition(protobufToText(families)).map((s) => [key(s), s.value]));
    expect(fromProtobuf).toEqual(fromText);
    // Keyed by the family's name as OpenMetrics has it (a counter's without `_total`).
    const created = new Map(
      parseExposition(first.openMetrics)
        .filter((s) => s.name.endsWith('_created'))
        .map((s) => [key({ ...s, name: s.name.replace(/_created$/, '') }), s.value]),
    );
    let started = 0;
    for (const f of families.filter((f) => f.type === 'counter' || f.type === 'histogram')) {
      for (const m of f.metrics) {
        started++;
        const name = f.type === 'counter' ? f.name.replace(/_total$/, '') : f.name;
        expect(m.created, `${f.name} ${JSON.stringify(m.labels)}`).toBe(
          created.get(key({ name, labels: m.labels, value: 0 })),
        );
      }
    }
    expect(started).toBe(created.size);
    // The lookback's traffic counters start at the lookback's first window (30 minutes before the start).
    const responses = families.find((f) => f.name === 'cdn_edge_responses_total')!;
    expect(Math.min(...responses.metrics.map((m) => m.created!))).toBe((START - 30 * 60_000) / 1000);
    for (const f of families.filter((f) => f.type === 'gauge')) {
      for (const m of f.metrics) expect(m.created).toBeUndefined();
    }
  });

  it('is deterministic: a second run renders exactly the same', async () => {
    const again = await goldenRun();
    expect(again.requests).toBe(first.requests);
    expect(normalise(again.text)).toBe(normalise(first.text));
    expect(normalise(again.openMetrics)).toBe(normalise(first.openMetrics));
    expect(normalise(protobufToText(decodeProtobuf(again.protobuf)))).toBe(
      normalise(protobufToText(decodeProtobuf(first.protobuf))),
    );
  }, 60_000);

  it('passes promtool check metrics (golden file and live text)', () => {
    const promtool = findTool('promtool');
    if (!promtool) return;
    const golden = existsSync(TEXT_GOLDEN) ? readFileSync(TEXT_GOLDEN, 'utf8') : normalise(first.text);
    expect(promtoolProblems(promtool, golden)).toBe('');
    expect(promtoolProblems(promtool, first.text)).toBe('');
    // promtool reads text only: the protobuf's names, types, help and samples, written back as text.
    expect(promtoolProblems(promtool, protobufToText(decodeProtobuf(first.protobuf)))).toBe('');
  });
});

afterAll(() => {
  if (UPDATE) console.warn(`golden files rewritten in ${GOLDEN_DIR}; review the diff`);
});
