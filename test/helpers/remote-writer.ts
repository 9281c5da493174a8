/**
 * A remote writer under test: src/remote-write's createRemoteWriter against a fake receiver
 * (./remote-write-receiver.ts), on a fake clock whose sleeps are recorded (the backoffs the queue waited), with a
 * log the test reads and the exporter's own kind of registry.
 */
import { Registry } from 'prom-client';
import type { Clock } from '../../src/clock.js';
import type { RemoteWriteConfig } from '../../src/config/typed-config.js';
import { createRemoteWriter } from '../../src/remote-write/index.js';
import type { RemoteWriter, SeriesSamples, WriteBatch, WriteOutcome } from '../../src/remote-write/types.js';
import { FakeClock } from './fake-clock.js';
import { captureLog } from './log-capture.js';

export function rwConfig(url: string, over: Partial<RemoteWriteConfig> = {}): RemoteWriteConfig {
  return {
    url,
    job: 'cdn-exporter-settled',
    instance: 'test-host',
    externalLabels: {},
    headers: {},
    tls: { insecureSkipVerify: false },
    timeoutMs: 30_000,
    queue: { maxPendingSamples: 2_000_000, maxSamplesPerSend: 5000 },
    ...over,
  };
}

export interface WriterUnderTest {
  writer: RemoteWriter;
  clock: FakeClock;
  /** Every sleep the writer asked of the clock, in ms, in order. */
  sleeps: number[];
  registry: Registry;
  lines: string[];
  /** Outcomes of the batches offered through `offer`, by batch in offer order (undefined until done). */
  outcomes: (WriteOutcome | undefined)[];
  /** Offers a batch and records its outcome; returns what offer returned. */
  offer(batch: WriteBatch): boolean;
  /**
   * Moves the fake clock (in steps of the longest backoff) until `done()` holds: the writer's waits pass at once,
   * real I/O (the receiver) takes the time it takes. Bounded: throws after `rounds` looks.
   */
  until(done: () => boolean, rounds?: number): Promise<void>;
  /** A sample of a metric family, by its labels (`result="sent"`), from the registry's text; undefined if absent. */
  metric(name: string, labels?: string): Promise<number | undefined>;
}

export function startWriter(config: RemoteWriteConfig, start = Date.UTC(2026, 0, 1, 12)): WriterUnderTest {
  const clock = new FakeClock(start);
  const sleeps: number[] = [];
  const recording: Clock = {
    now: () => clock.now(),
    sleep: (ms, signal) => {
      sleeps.push(ms);
      return clock.sleep(ms, signal);
    },
  };
  const registry = new Registry();
  const { log, lines } = captureLog();
  const writer = createRemoteWriter(config, {
    clock: recording,
    log,
    registry,
    random: () => 0.5,
    version: '9.8.7',
  });
  const outcomes: (WriteOutcome | undefined)[] = [];
  return {
    writer,
    clock,
    sleeps,
    registry,
    lines,
    outcomes,
    offer: (batch) => {
      const i = outcomes.length;
      outcomes.push(undefined);
      const ok = writer.offer(batch, (o) => {
        if (outcomes[i] !== undefined) throw new Error(`batch ${i}: done called twice`);
        outcomes[i] = o;
      });
      if (!ok) outcomes.pop();
      return ok;
    },
    until: async (done, rounds = 4000) => {
      for (let i = 0; i < rounds; i++) {
        if (done()) return;
        if (clock.pending > 0) await clock.advance(5000);
        else await new Promise((r) => setTimeout(r, 2));
      }
      throw new Error('until: the condition did not hold');
    },
    metric: async (name, labels) => {
      const text = await registry.metrics();
      const want = labels === undefined ? name : `${name}{${labels}}`;
      for (const line of text.split('\n')) {
        const at = line.lastIndexOf(' ');
        if (line.slice(0, at) === want) return Number(line.slice(at + 1));
      }
      return undefined;
    },
  };
}

/** `n` series of one account, `k` samples each a minute apart from `at`, values that say which they are. */
export function series(
  n: number,
  k: number,
  at: number,
  family = 'cdn_edge_requests_total',
): SeriesSamples[] {
  return Array.from({ length: n }, (_, i) => ({
    labels: [
      ['resource', String(1000 + i)],
      ['__name__', family],
      ['account', 'acme'],
    ],
    samples: Array.from({ length: k }, (_, j) => ({ value: i * 1000 + j, timestampMs: at + j * 60_000 })),
  }));
}
