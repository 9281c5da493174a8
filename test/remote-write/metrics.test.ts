import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { createRemoteWriteMetrics } from '../../src/remote-write/metrics.js';

describe('remote-write metrics', () => {
  it('are on the registry given, with every sample result at 0 before anything was sent', async () => {
    const registry = new Registry();
    createRemoteWriteMetrics(registry);
    const text = await registry.metrics();
    for (const result of ['sent', 'retried', 'dropped'])
      expect(text).toContain(`cdn_exporter_remote_write_samples_total{result="${result}"} 0`);
    expect(text).toContain('cdn_exporter_remote_write_pending_samples 0');
    expect(text).toContain('# TYPE cdn_exporter_remote_write_requests_total counter');
    expect(text).toContain('# TYPE cdn_exporter_remote_write_settled_timestamp_seconds gauge');
  });

  it('keeps the newest settled end per account, and forget() removes an account', async () => {
    const registry = new Registry();
    const m = createRemoteWriteMetrics(registry);
    m.settled('north', 1_767_225_900_000);
    m.settled('north', 1_767_225_600_000);
    m.settled('south', 1_767_225_600_000);
    let text = await registry.metrics();
    expect(text).toContain('cdn_exporter_remote_write_settled_timestamp_seconds{account="north"} 1767225900');
    expect(text).toContain('cdn_exporter_remote_write_settled_timestamp_seconds{account="south"} 1767225600');
    m.forget('north');
    text = await registry.metrics();
    expect(text).not.toContain('account="north"');
    expect(text).toContain('account="south"');
    // Forgotten means forgotten: an older end starts it again from there.
    m.settled('north', 1_767_225_000_000);
    expect(await registry.metrics()).toContain(
      'cdn_exporter_remote_write_settled_timestamp_seconds{account="north"} 1767225000',
    );
  });
});
