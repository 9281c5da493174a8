/**
 * The settled writer's own metric (docs/metrics.md, "Remote write"), on the exporter's registry; the transport's
 * are in src/remote-write/metrics.ts.
 */
import { Counter, type Registry } from 'prom-client';

export interface SettledMetrics {
  /** A window the writer read from the API itself. */
  readOwn(account: string): void;
  forget(account: string): void;
}

export function createSettledMetrics(registry: Registry): SettledMetrics {
  const reads = new Counter({
    name: 'cdn_exporter_remote_write_reads_total',
    help:
      'Traffic windows the settled writer read from the API itself, because no settled window reached it for that ' +
      'time: after a restart, while the remote-write queue was full, or for re-reads out of order. Each is one ' +
      'request at the re-reads priority.',
    labelNames: ['account'] as const,
    registers: [registry],
  });
  return {
    readOwn: (account) => reads.inc({ account }),
    forget: (account) => reads.remove({ account }),
  };
}
