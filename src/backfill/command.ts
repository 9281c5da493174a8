/**
 * `cdn-exporter backfill` (docs/backfill.md): the configuration and the flags checked (./plan.ts), the progress of
 * an earlier run found or refused, the runs made (a range, or the gaps listed beside state_file), the upstreams
 * built as the exporter builds them (src/exporter/upstreams.ts: one per token source, logins started first), then
 * ./backfill.ts, and a summary. src/commands.ts calls it with the process's streams, environment and signal.
 */
import { existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { Counter, Registry } from 'prom-client';
import { type AuthMetrics, createAuthMetrics } from '../auth/metrics.js';
import { type Clock, systemClock } from '../clock.js';
import {
  type CommandLine,
  type Config,
  ConfigError,
  type Env,
  loadConfig,
  METRIC_NAMES,
  type TokenSource,
  tokenSources,
} from '../config/index.js';
import { DEFAULTS } from '../config/schema.js';
import { Upstreams } from '../exporter/upstreams.js';
import { createAgent } from '../http/request.js';
import { createLogger, type Logger } from '../log.js';
import type { BackoffPolicy } from '../poll/backoff.js';
import { createRemoteWriter } from '../remote-write/index.js';
import { settledLabels } from '../settled/index.js';
import { WindowSeries } from '../settled/window-series.js';
import { MetricsClient } from '../traffic/client.js';
import { TRAFFIC_BACKOFF } from '../traffic/retry-decision.js';
import { type BackfillOutputDeps, type BackfillResult, runBackfill } from './backfill.js';
import { gapsPath, markFilled, pendingGaps } from './gaps.js';
import { foldByKept, keptResources } from './kept-resources.js';
import { OpenMetricsSpool } from './openmetrics.js';
import { BackfillError, type BackfillPlan, planBackfill, rangeRuns } from './plan.js';
import { askedOf, ProgressFile, type RunProgress } from './progress-file.js';
import { formatSeconds, ProgressReport } from './progress-report.js';

/** An interruption waits this long for the receiver to take what is queued (as the exporter's stop grace). */
const CLOSE_GRACE_MS = 2500;

export interface BackfillCommandOptions {
  cl: CommandLine;
  env: Env;
  /** remote_write.instance's default, and the `instance` label without remote_write. */
  hostname: string;
  version: string;
  stdout: { write(text: string): unknown };
  stderr: { write(text: string): unknown; isTTY?: boolean };
  /** Aborted by SIGINT or SIGTERM; its reason the signal's name. */
  signal: AbortSignal;
  clock?: Clock;
  random?: () => number;
  backoff?: BackoffPolicy;
  /** How often progress is saved (default 1 s). */
  checkpointMs?: number;
}

const SIGNAL_EXIT: Record<string, number> = { SIGINT: 130, SIGTERM: 143 };

/** The `job` and `instance` labels (and external labels) every backfilled series ends with. */
export function backfillLabels(config: Config, hostname: string): [string, string][] {
  if (config.remoteWrite) return settledLabels(config);
  return [
    ['job', DEFAULTS.remote_write.job],
    ['instance', hostname],
  ];
}

export async function backfillCommand(o: BackfillCommandOptions): Promise<number> {
  const fail = (message: string, code: number) => {
    o.stderr.write(`cdn-exporter backfill: ${message}\n`);
    return code;
  };
  const clock = o.clock ?? systemClock;
  let config: Config;
  let plan: BackfillPlan;
  try {
    config = loadConfig({ file: o.cl.configFile, env: o.env, hostname: o.hostname });
    plan = planBackfill(
      o.cl.backfill ?? { remoteWrite: false, gaps: false, resume: false },
      config,
      clock.now(),
    );
  } catch (err) {
    if (err instanceof ConfigError || err instanceof BackfillError) return fail(err.message, 2);
    throw err;
  }
  const tty = o.stderr.isTTY === true;
  let report: ProgressReport | undefined;
  // On a terminal a log line first clears the bar's line; the bar is drawn again at the next window.
  const log: Logger = createLogger({
    level: o.cl.logLevel,
    format: o.cl.logFormat,
    destination: {
      write: (line: string) => {
        if (tty) o.stderr.write('\r\x1b[K');
        return o.stderr.write(line);
      },
    } as unknown as NodeJS.WritableStream,
  });

  const progressFile = plan.progressPath ? new ProgressFile(plan.progressPath) : undefined;
  const loaded = await progressFile?.load();
  const asked = askedOf(plan);
  if (plan.resume && !loaded)
    return fail(`--resume: nothing to resume, ${plan.progressPath} does not exist`, 2);
  if (!plan.resume && loaded)
    return fail(
      `an interrupted backfill left ${plan.progressPath}: run the same command with --resume to continue it, or remove it to start anew`,
      2,
    );
  if (loaded && loaded.asked !== asked)
    return fail(`--resume: ${plan.progressPath} is the progress of another backfill (${loaded.asked})`, 2);
  const out = plan.output;
  if (out.kind === 'file' && !plan.resume && existsSync(out.path))
    return fail(`--output ${out.path} exists: remove it or choose another file`, 2);

  let runs: RunProgress[];
  if (loaded) runs = loaded.runs;
  else if (plan.mode === 'range') runs = rangeRuns(plan).map((r) => ({ ...r, next: r.start }));
  else {
    const pending = await pendingGaps(config.stateFile!, plan.accounts, plan.latestEnd);
    if (pending.bad > 0)
      log.warn({ entries: pending.bad }, 'gaps file: entries that are not whole-minute spans left out');
    if (pending.notFinal.length > 0)
      log.info(
        { spans: pending.notFinal.length },
        'gaps not final yet (delay + revisit) are left for a later run',
      );
    if (pending.runs.length === 0) {
      o.stdout.write('backfill: no gap to fill\n');
      return 0;
    }
    log.info(
      { spans: pending.runs.length, minutes_by_reason: pending.reasons },
      'filling the gaps the exporter skipped',
    );
    runs = pending.runs.map((r) => ({ ...r, next: r.start }));
  }

  const controller = new AbortController();
  const interrupt = () => controller.abort(o.signal.reason);
  if (o.signal.aborted) interrupt();
  else o.signal.addEventListener('abort', interrupt, { once: true });
  const registry = new Registry();
  let requests = 0;
  let auth: AuthMetrics | undefined;
  const agent = createAgent({ headersTimeoutMs: config.api.timeoutMs, bodyTimeoutMs: config.api.timeoutMs });
  const upstreams = new Upstreams({
    api: config.api,
    clock,
    log,
    agent,
    signal: controller.signal,
    self: {
      observeRequest: (api) => {
        if (api === 'metrics') requests++;
      },
      parseErrors: new Counter({
        name: 'cdn_exporter_parse_errors_total',
        help: 'Answers that were not of the documented shape.',
        labelNames: ['api'] as const,
        registers: [registry],
      }),
    },
    auth: () => {
      auth ??= createAuthMetrics(registry);
      return auth;
    },
    ...(o.random ? { random: o.random } : {}),
  });
  const tokens = tokenSources(config, undefined, (c) => upstreams.createLogin(c));
  const tokenOf = (account: string): TokenSource => tokens.accounts.get(account)!;
  // The exporter may be running with the same tokens, or this backfill a moment ago: the first second is spent.
  upstreams.tookOver(clock.now());
  const loops: Promise<void>[] = [];
  const remote =
    out.kind === 'remote'
      ? createRemoteWriter(config.remoteWrite!, { clock, log, registry, version: o.version })
      : undefined;
  let output: BackfillOutputDeps;
  if (out.kind === 'file') {
    const spool = new OpenMetricsSpool(`${out.path}.parts`);
    // No progress: parts left by a run that died before its first checkpoint are nobody's.
    if (!loaded) await rm(spool.dir, { recursive: true, force: true });
    // Lines wait in memory until the next checkpoint; past about one answer's worth (api.max_body_bytes) a window
    // waits for them to be written.
    output = { kind: 'file', spool, path: out.path, maxBufferedBytes: config.api.maxBodyBytes };
    if (loaded?.parts) output.parts = loaded.parts;
  } else
    output = {
      kind: 'remote',
      writer: remote!,
      timeoutMs: config.remoteWrite!.timeoutMs,
      graceMs: CLOSE_GRACE_MS,
    };

  // limits.top_resources: the resources kept apart, as the progress has them (a resume), else the saved ranking's.
  const kept = loaded ? (loaded.kept ?? {}) : await keptResources(config, plan.accounts, clock.now(), log);
  const asks = config.metrics.metrics.length ? config.metrics.metrics : METRIC_NAMES;
  const onlyResource = config.metrics.resources.length === 1 ? config.metrics.resources[0] : undefined;
  let result: BackfillResult | undefined;
  try {
    await upstreams.startLogins(new Set(plan.accounts.map(tokenOf)), controller.signal, (l) => loops.push(l));
    report = new ProgressReport({ clock, tty, write: (t) => o.stderr.write(t), log });
    result = await runBackfill({
      asked,
      accounts: plan.accounts,
      runs,
      windowMs: plan.windowMs,
      requestsBefore: loaded?.requests ?? 0,
      requests: () => requests,
      fetchFor: (account) => {
        const client = new MetricsClient(upstreams.for(tokenOf(account)));
        return (start, end) =>
          client.fetchTraffic({
            account,
            start,
            end,
            metrics: asks,
            breakdown: config.metrics.breakdown,
            ...(onlyResource === undefined ? {} : { resource: onlyResource }),
          });
      },
      readAhead: Math.max(1, config.api.concurrency),
      series: new WindowSeries({
        breakdown: config.metrics.breakdown,
        metrics: config.metrics.metrics,
        resources: config.metrics.resources,
        maxLabelLength: config.limits.maxLabelLength,
        extraLabels: backfillLabels(config, o.hostname),
        fold: foldByKept(kept),
      }),
      kept,
      retentionMs: config.metrics.counterRetentionMs,
      output,
      ...(progressFile ? { progressFile } : {}),
      checkpointMs: o.checkpointMs ?? 1000,
      clock,
      log,
      random: o.random ?? Math.random,
      backoff: o.backoff ?? TRAFFIC_BACKOFF,
      onProgress: (done, total, n) => report?.update(done, total, n),
      signal: controller.signal,
    });
  } finally {
    report?.end();
    if (!controller.signal.aborted) controller.abort();
    await Promise.race([Promise.allSettled(loops), clock.sleep(250).catch(() => {})]);
    await agent.destroy().catch(() => {});
    // A backfill that threw (not one that stopped or was interrupted: it closed its writer) leaves none open.
    if (remote && !result) await remote.close(clock.now()).catch(() => {});
  }

  // A range written covers the gaps listed in it too: marked filled, a later --gaps run does not write them again.
  if (
    result.status === 'done' &&
    config.stateFile !== undefined &&
    (plan.mode === 'gaps' || existsSync(gapsPath(config.stateFile)))
  )
    await markFilled(config.stateFile, runs);
  return summarize(result, plan, o, report, registry, o.signal.reason);
}

async function summarize(
  r: BackfillResult,
  plan: BackfillPlan,
  o: BackfillCommandOptions,
  report: ProgressReport | undefined,
  registry: Registry,
  signal: unknown,
): Promise<number> {
  const seconds = report?.seconds() ?? 0;
  let line =
    `${r.windows} windows (${r.skipped} skipped), ${r.requests} requests, ${r.samples} samples` +
    ` in ${seconds < 60 ? `${seconds.toFixed(1)}s` : formatSeconds(seconds)}`;
  if (plan.output.kind === 'file' && r.bytes !== undefined)
    line += `; wrote ${plan.output.path} (${r.bytes} bytes)`;
  if (plan.output.kind === 'remote') {
    const values =
      (await registry.getSingleMetric('cdn_exporter_remote_write_samples_total')?.get())?.values ?? [];
    const of = (result: string) => values.find((v) => v.labels.result === result)?.value ?? 0;
    line += `; remote write: ${of('sent')} samples sent, ${of('dropped')} dropped`;
  }
  if (r.status === 'done') {
    o.stdout.write(`backfill done: ${line}\n`);
    return 0;
  }
  o.stdout.write(`backfill ${r.status}: ${line}\n`);
  if (r.status === 'stopped') {
    o.stderr.write(`cdn-exporter backfill: ${r.error}\n`);
    return 1;
  }
  o.stderr.write(
    `cdn-exporter backfill: interrupted; ${plan.progressPath ? 'run the same command with --resume to continue' : 'no progress kept (no state_file or --progress)'}\n`,
  );
  return SIGNAL_EXIT[String(signal)] ?? 1;
}
