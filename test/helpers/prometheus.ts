/**
 * A real Prometheus for end-to-end tests: a generated config in a fresh directory, loopback only, its own TSDB in
 * that directory. stop() kills it (SIGTERM, then SIGKILL) and removes the directory; a process-exit hook kills it
 * too when the test worker dies first.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';

export interface PrometheusOptions {
  bin: string;
  /** `host:port` of the exporter. */
  target: string;
  /** The scrape job's name; the rules' `job=~".*cdn-exporter.*"` matchers need it to contain cdn-exporter. */
  job: string;
  /** Absolute paths of rule files. */
  ruleFiles: string[];
  /** Scrape and rule evaluation interval (default 1s). */
  interval?: string;
  /** How long to wait for /-/ready (default 20 s). */
  readyTimeoutMs?: number;
  /** More keys for the scrape job (scheme, tls_config, basic_auth, ...). */
  scrape?: Record<string, unknown>;
  /** More command-line flags (`--enable-feature=...`). */
  flags?: string[];
  /** More scrape jobs, each with its own name, target and keys. */
  extraJobs?: { job: string; target: string; scrape?: Record<string, unknown> }[];
  /** An existing TSDB directory to serve (blocks made by promtool); default: a fresh one. Not removed by stop(). */
  storagePath?: string;
  /** The port to listen on (a Prometheus started again where its clients expect it); default: a free one. */
  port?: number;
}

/** One element of an instant query's result (vector) or of a scalar answer. */
export interface PromSample {
  metric: Record<string, string>;
  value: [number, string];
}

/** One series of a range query's result (matrix). */
export interface PromSeries {
  metric: Record<string, string>;
  values: [number, string][];
}

export interface RangeAnswer {
  status: 'success' | 'error';
  result: PromSeries[];
  error?: string;
}

export interface QueryAnswer {
  status: 'success' | 'error';
  resultType?: string;
  result: PromSample[];
  error?: string;
}

/** One scrape target as Prometheus' targets API gives it. */
export interface PromTarget {
  labels: Record<string, string>;
  health: string;
  lastError: string;
}

export interface RuleState {
  group: string;
  name: string;
  health: string;
  lastError: string;
  lastEvaluation: string;
}

export interface Prometheus {
  url: string;
  dir: string;
  /**
   * An instant query at the current time, or at `at` (Unix seconds; then it may take up to 2 minutes: month-long
   * queries). Never throws for a PromQL error: `status` says it.
   */
  query(expr: string, at?: number): Promise<QueryAnswer>;
  /**
   * A range query from `start` to `end` every `step` (Unix seconds): the expression evaluated at each step as an
   * instant query there would be (up to 2 minutes: week-long ranges). Never throws for a PromQL error.
   */
  queryRange(expr: string, start: number, end: number, step: number): Promise<RangeAnswer>;
  /** Values of a label on the series matching `match` (as Grafana's label_values(match, label)). */
  labelValues(label: string, match: string): Promise<{ status: string; values: string[]; error?: string }>;
  /** The health of every rule Prometheus loaded. */
  rules(): Promise<RuleState[]>;
  /** The active scrape targets, with their health and last error. */
  targets(): Promise<PromTarget[]>;
  /** Scrapes of the target so far (from Prometheus' own count of `up` samples). */
  scrapes(): Promise<number>;
  /** The tail of what Prometheus wrote to stderr, for failure messages. */
  logTail(): string;
  stop(): Promise<void>;
}

/** A free port on the loopback address (free when asked: bind it soon). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const addr = server.address();
  const port = typeof addr === 'object' && addr ? addr.port : 0;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

async function getJson<T>(url: string, timeoutMs = 5000): Promise<T> {
  const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
  return (await res.json()) as T;
}

function exited(child: ChildProcess): boolean {
  return child.exitCode !== null || child.signalCode !== null;
}

async function kill(child: ChildProcess): Promise<void> {
  if (exited(child)) return;
  const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
  await gone;
  clearTimeout(timer);
}

/** Starts Prometheus on a free loopback port; retries with another port when the first is taken meanwhile. */
export async function startPrometheus(o: PrometheusOptions): Promise<Prometheus> {
  const dir = mkdtempSync(join(tmpdir(), 'cdn-e2e-prometheus-'));
  const interval = o.interval ?? '1s';
  const configFile = join(dir, 'prometheus.yml');
  writeFileSync(
    configFile,
    stringify({
      global: { scrape_interval: interval, scrape_timeout: interval, evaluation_interval: interval },
      rule_files: o.ruleFiles,
      scrape_configs: [
        { job_name: o.job, static_configs: [{ targets: [o.target] }], ...o.scrape },
        ...(o.extraJobs ?? []).map((j) => ({
          job_name: j.job,
          static_configs: [{ targets: [j.target] }],
          ...j.scrape,
        })),
      ],
    }),
  );
  let lastError: unknown;
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      return await launch(o, dir, configFile);
    } catch (err) {
      lastError = err;
    }
  }
  rmSync(dir, { recursive: true, force: true });
  throw lastError;
}

async function launch(o: PrometheusOptions, dir: string, configFile: string): Promise<Prometheus> {
  const port = o.port ?? (await freePort());
  const url = `http://127.0.0.1:${port}`;
  const child = spawn(
    o.bin,
    [
      `--config.file=${configFile}`,
      `--storage.tsdb.path=${o.storagePath ?? join(dir, `data-${port}`)}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--log.level=warn',
      ...(o.flags ?? []),
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  child.stderr?.setEncoding('utf8');
  child.stderr?.on('data', (chunk: string) => {
    stderr = (stderr + chunk).slice(-8000);
  });
  const onExit = () => child.kill('SIGKILL');
  process.once('exit', onExit);

  const stop = async () => {
    await kill(child);
    process.removeListener('exit', onExit);
  };
  const until = Date.now() + (o.readyTimeoutMs ?? 20_000);
  for (;;) {
    if (exited(child)) {
      await stop();
      throw new Error(`prometheus exited (${child.exitCode ?? child.signalCode}):\n${stderr}`);
    }
    try {
      const res = await fetch(`${url}/-/ready`, { signal: AbortSignal.timeout(1000) });
      if (res.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > until) {
      await stop();
      throw new Error(`prometheus was not ready within ${o.readyTimeoutMs ?? 20_000} ms:\n${stderr}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }

  const api = (path: string, params: Record<string, string>) =>
    `${url}/api/v1/${path}?${new URLSearchParams(params).toString()}`;

  const query = async (expr: string, at?: number): Promise<QueryAnswer> => {
    const params: Record<string, string> = { query: expr };
    if (at !== undefined) params.time = String(at);
    const body = await getJson<{
      status: 'success' | 'error';
      error?: string;
      data?: { resultType: string; result: unknown };
    }>(api('query', params), at === undefined ? 5000 : 120_000);
    const data = body.data;
    let result: PromSample[] = [];
    if (data?.resultType === 'vector') result = data.result as PromSample[];
    else if (data?.resultType === 'scalar') result = [{ metric: {}, value: data.result as [number, string] }];
    return { status: body.status, resultType: data?.resultType, result, error: body.error };
  };

  const queryRange = async (expr: string, start: number, end: number, step: number): Promise<RangeAnswer> => {
    const params = { query: expr, start: String(start), end: String(end), step: String(step) };
    const body = await getJson<{
      status: 'success' | 'error';
      error?: string;
      data?: { resultType: string; result: unknown };
    }>(api('query_range', params), 120_000);
    const result = body.data?.resultType === 'matrix' ? (body.data.result as PromSeries[]) : [];
    return { status: body.status, result, error: body.error };
  };

  return {
    url,
    dir,
    query,
    queryRange,
    labelValues: async (label, match) => {
      const body = await getJson<{ status: string; data?: string[]; error?: string }>(
        api(`label/${encodeURIComponent(label)}/values`, { 'match[]': match }),
      );
      return { status: body.status, values: body.data ?? [], error: body.error };
    },
    rules: async () => {
      const body = await getJson<{
        data: { groups: { name: string; rules: Omit<RuleState, 'group'>[] }[] };
      }>(`${url}/api/v1/rules`);
      return body.data.groups.flatMap((g) => g.rules.map((r) => ({ ...r, group: g.name })));
    },
    targets: async () => {
      const body = await getJson<{ data: { activeTargets: PromTarget[] } }>(`${url}/api/v1/targets`);
      return body.data.activeTargets;
    },
    scrapes: async () => {
      const a = await query(`count_over_time(up{job="${o.job}"}[1h])`);
      return Number(a.result[0]?.value[1] ?? 0);
    },
    logTail: () => stderr,
    stop: async () => {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
