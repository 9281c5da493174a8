/**
 * The contract's monthly commit per account (docs/metrics.md, "Cost"), as gauges that rules and dashboards
 * compare the month's traffic with: `cdn_commit_transfer_bytes{account}` and
 * `cdn_commit_bandwidth_bits_per_second{account}`. An account without a commit of a kind has no series of it
 * (never a 0, which would read as "everything is over commit"). The families are registered on first use, so an
 * exporter without any commit exposes neither.
 */
import { Gauge, type Registry } from 'prom-client';
import type { CommitConfig } from '../config/index.js';

export class CommitMetrics {
  private transfer: Gauge<'account'> | undefined;
  private bandwidth: Gauge<'account'> | undefined;

  constructor(private readonly registry: Registry) {}

  /** Sets the account's commit gauges (an absent kind: its series is removed). */
  set(account: string, commit: CommitConfig | undefined): void {
    const bytes = commit?.monthlyTransferBytes;
    const bits = commit?.bandwidthP95BitsPerSecond;
    if (bytes !== undefined) this.transferGauge().set({ account }, bytes);
    else this.transfer?.remove({ account });
    if (bits !== undefined) this.bandwidthGauge().set({ account }, bits);
    else this.bandwidth?.remove({ account });
  }

  /** The account is no longer polled: its commit series go with its other series. */
  remove(account: string): void {
    this.set(account, undefined);
  }

  private transferGauge(): Gauge<'account'> {
    this.transfer ??= new Gauge({
      name: 'cdn_commit_transfer_bytes',
      help: 'Bytes the contract commits to transfer at the edge per calendar month (commit.monthly_transfer).',
      labelNames: ['account'] as const,
      registers: [this.registry],
    });
    return this.transfer;
  }

  private bandwidthGauge(): Gauge<'account'> {
    this.bandwidth ??= new Gauge({
      name: 'cdn_commit_bandwidth_bits_per_second',
      help:
        'The contract commit on the calendar month 95th percentile of 5-minute edge bandwidth, ' +
        'bits per second (commit.bandwidth_p95).',
      labelNames: ['account'] as const,
      registers: [this.registry],
    });
    return this.bandwidth;
  }
}
