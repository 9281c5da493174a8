/**
 * A real Prometheus scrapes the app: its default Accept asks for OpenMetrics and its Go client sends
 * Accept-Encoding: gzip, so this checks the converted OpenMetrics text and the multi-member gzip body with
 * the parser users run, not ours.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/log.js';
import { settle } from '../helpers/fake-clock.js';
import { exporterApp } from '../helpers/fake-exposition.js';
import { type Prometheus, type PromTarget, startPrometheus } from '../helpers/prometheus.js';
import { findTool } from '../helpers/tools.js';
import { listen, type Running } from './http.js';

const prometheus = findTool('prometheus');

describe.skipIf(!prometheus)('scraped by Prometheus', () => {
  let app: Running;
  let prom: Prometheus;

  beforeAll(async () => {
    app = await listen(exporterApp(silentLogger));
    prom = await startPrometheus({
      bin: prometheus!,
      target: `127.0.0.1:${app.port}`,
      job: 'exporter',
      ruleFiles: [],
    });
  }, 60_000);

  afterAll(async () => {
    await prom?.stop();
    await app?.close();
  });

  const query = async (expr: string) => (await prom.query(expr)).result;

  it('the target is up and the store and registry series arrive under their names', async () => {
    // Bounded: at most ~25 s of polling Prometheus' API, which needs a couple of scrape intervals.
    let target: PromTarget | undefined;
    for (let i = 0; i < 100; i++) {
      target = (await prom.targets())[0];
      if (target && target.health !== 'unknown' && (await query('cdn_edge_requests_total')).length > 0) break;
      await new Promise((resolve) => setTimeout(resolve, 250));
      await settle();
    }
    expect(target, prom.logTail()).toBeDefined();
    expect(target?.lastError).toBe('');
    expect(target?.health).toBe('up');
    const edge = await query('cdn_edge_requests_total{resource="101"}');
    expect(edge.map((r) => r.value[1])).toEqual(['1234']);
    expect((await query('cdn_exporter_build_info')).map((r) => r.metric.version)).toEqual(['0.1.0']);
    expect(await query('process_cpu_seconds_total')).toHaveLength(1);
    expect(await query('cdn_exporter_parse_errors_total')).toHaveLength(1);
  });
});
