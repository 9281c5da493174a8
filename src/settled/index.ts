/**
 * The settled writer as the exporter runs it (`remote_write` set): the remote writer it sends through
 * (src/remote-write/), its state beside `state_file`, and the sink the account pollers hand settled windows to.
 */
import type { Registry } from 'prom-client';
import { type Clock, MINUTE } from '../clock.js';
import type { Config } from '../config/index.js';
import type { Logger } from '../log.js';
import { createRemoteWriter, type RemoteWriter } from '../remote-write/index.js';
import { createSettledMetrics } from './metrics.js';
import { SettledStateFile, settledStatePath } from './settled-state.js';
import { WindowSeries, type WindowSeriesOptions } from './window-series.js';
import { SettledWriter } from './writer.js';

/** The API's longest window: the writer's own reads are at most this long. */
const MAX_READ_MS = 10 * MINUTE;

export interface SettledDeps {
  clock: Clock;
  log: Logger;
  registry: Registry;
  version: string;
  random?: () => number;
  /** Folding (limits.top_resources, a full cap): the scraped side's decision per answer (TrafficMapping.foldOf). */
  fold?: WindowSeriesOptions['fold'];
}

/** What the exporter holds of a running settled writer. */
export interface Settled {
  writer: SettledWriter;
  remote: RemoteWriter;
  /** Reads gaps until `signal` aborts. */
  run(signal: AbortSignal): Promise<void>;
  /** Sends what is queued until `deadlineMs`, then saves the acknowledged state. */
  close(deadlineMs: number): Promise<void>;
}

/** The labels every settled series ends with: job, instance, then the external labels by name. */
export function settledLabels(config: Pick<Config, 'remoteWrite'>): [string, string][] {
  const rw = config.remoteWrite;
  if (!rw) return [];
  const external = Object.entries(rw.externalLabels).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return [['job', rw.job], ['instance', rw.instance], ...external];
}

/** The series of the settled side, from the same keys the scraped side reads, with job, instance and more. */
export function settledSeries(
  config: Pick<Config, 'metrics' | 'limits' | 'remoteWrite'>,
  fold?: WindowSeriesOptions['fold'],
): WindowSeries {
  return new WindowSeries({
    breakdown: config.metrics.breakdown,
    metrics: config.metrics.metrics,
    resources: config.metrics.resources,
    maxLabelLength: config.limits.maxLabelLength,
    extraLabels: settledLabels(config),
    ...(fold ? { fold } : {}),
  });
}

/** Undefined when `remote_write` is not configured. */
export async function startSettled(config: Config, d: SettledDeps): Promise<Settled | undefined> {
  const rw = config.remoteWrite;
  if (!rw) return undefined;
  const file = config.stateFile ? new SettledStateFile(settledStatePath(config.stateFile)) : undefined;
  const loaded = file ? await file.load(d.clock.now(), d.log) : undefined;
  const remote = createRemoteWriter(rw, {
    clock: d.clock,
    log: d.log,
    registry: d.registry,
    version: d.version,
    ...(d.random ? { random: d.random } : {}),
  });
  const finalAfterMs = config.metrics.delayMs + config.metrics.revisitMs;
  const metrics = createSettledMetrics(d.registry);
  const writer = new SettledWriter(
    {
      finalAfterMs,
      // A revisit comes delay + revisit after its window, later after failures: a gap waits that long again.
      graceMs: finalAfterMs + MAX_READ_MS,
      maxReadMs: MAX_READ_MS,
      maxHeldRecords: rw.queue.maxPendingSamples,
      tickMs: 10_000,
    },
    {
      clock: d.clock,
      log: d.log,
      batches: remote,
      series: settledSeries(config, d.fold),
      retentionMs: config.metrics.counterRetentionMs,
      ...(file ? { persistence: file } : {}),
      ...(loaded ? { loaded } : {}),
      readOwn: metrics.readOwn,
      forgotten: (account) => {
        metrics.forget(account);
        remote.forget(account);
      },
    },
  );
  return {
    writer,
    remote,
    run: (signal) => writer.run(signal),
    close: async (deadlineMs) => {
      await remote.close(deadlineMs);
      await writer.flush();
    },
  };
}
