/**
 * The remote-write transport's own metrics (docs/metrics.md, "Remote write"), on the exporter's registry (never
 * prom-client's global one), as src/server/self-metrics.ts registers the others.
 */
import { Counter, Gauge, type Registry } from 'prom-client';

export const SAMPLE_RESULTS = ['sent', 'retried', 'dropped'] as const;
export type SampleResult = (typeof SAMPLE_RESULTS)[number];

export interface RemoteWriteMetrics {
  /** Counts samples: `sent` (accepted), `retried` (each failed attempt of a retried request), `dropped`. */
  samples(result: SampleResult, n: number): void;
  /** Counts one request by its HTTP status, or `error` when no answer came (network failure, timeout). */
  request(code: number | 'error'): void;
  setPending(samples: number): void;
  /** The end (ms) of the newest window of `account` whose batch was sent or dropped. */
  settled(account: string, endMs: number): void;
  forget(account: string): void;
}

export function createRemoteWriteMetrics(registry: Registry): RemoteWriteMetrics {
  const registers = [registry];
  const samples = new Counter({
    name: 'cdn_exporter_remote_write_samples_total',
    help:
      'Samples of settled windows given to remote write, by result: sent (accepted by the receiver), retried ' +
      '(each failed attempt of a request sent again), dropped (refused for good by a 4xx other than 429).',
    labelNames: ['result'] as const,
    registers,
  });
  for (const result of SAMPLE_RESULTS) samples.inc({ result }, 0);
  const requests = new Counter({
    name: 'cdn_exporter_remote_write_requests_total',
    help: 'Remote-write requests, by HTTP status code (code="error" for network failures and timeouts).',
    labelNames: ['code'] as const,
    registers,
  });
  const pending = new Gauge({
    name: 'cdn_exporter_remote_write_pending_samples',
    help: 'Samples waiting to be sent by remote write (queued or in the request in flight).',
    registers,
  });
  const settled = new Gauge({
    name: 'cdn_exporter_remote_write_settled_timestamp_seconds',
    help: 'End of the newest settled window of the account whose samples were sent (or dropped) by remote write.',
    labelNames: ['account'] as const,
    registers,
  });
  const newest = new Map<string, number>();
  return {
    samples: (result, n) => {
      if (n > 0) samples.inc({ result }, n);
    },
    request: (code) => requests.inc({ code: String(code) }),
    setPending: (n) => pending.set(n),
    settled: (account, endMs) => {
      // Batches of an account finish in the order offered; a max keeps the gauge from going back all the same.
      const at = Math.max(newest.get(account) ?? Number.NEGATIVE_INFINITY, endMs);
      newest.set(account, at);
      settled.set({ account }, at / 1000);
    },
    forget: (account) => {
      newest.delete(account);
      settled.remove({ account });
    },
  };
}
