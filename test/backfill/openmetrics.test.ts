/**
 * The OpenMetrics side of `--output` (src/backfill/openmetrics.ts, sinks.ts): lines as promtool reads them, parts
 * per family and account assembled in a fixed order, a resume cutting parts back to the progress, and the spool
 * written out once it holds more than api.max_body_bytes.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { formatTimestamp, OpenMetricsSpool, seriesLines } from '../../src/backfill/openmetrics.js';
import { FileSink } from '../../src/backfill/sinks.js';
import type { SettledSeries } from '../../src/settled/running-totals.js';

const dirs: string[] = [];
function folder(): string {
  const dir = mkdtempSync(join(tmpdir(), 'cdn-om-'));
  dirs.push(dir);
  return dir;
}
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function series(name: string, account: string, value: number, ms: number): SettledSeries {
  return {
    labels: [
      ['__name__', name],
      ['account', account],
      ['job', 'cdn-exporter-settled'],
    ],
    samples: [{ value, timestampMs: ms }],
  };
}

describe('OpenMetrics lines', () => {
  it('escape label values, write seconds with three decimals, and values as JavaScript reads them back', () => {
    const s: SettledSeries = {
      labels: [
        ['__name__', 'cdn_edge_requests_total'],
        ['resource', 'a"b\\c\nd'],
      ],
      samples: [
        { value: 0, timestampMs: 1_790_812_800_001 },
        { value: 12345678901, timestampMs: 1_790_813_400_000 },
      ],
    };
    expect(seriesLines(s)).toBe(
      'cdn_edge_requests_total{resource="a\\"b\\\\c\\nd"} 0 1790812800.001\n' +
        'cdn_edge_requests_total{resource="a\\"b\\\\c\\nd"} 12345678901 1790813400.000\n',
    );
    expect(formatTimestamp(1_000)).toBe('1.000');
    expect(seriesLines(series('cdn_edge_cache_hit_ratio', 'a', 0.1 + 0.2, 60_000))).toMatch(
      / 0.30000000000000004 60.000\n$/,
    );
  });
});

describe('the spool of --output', () => {
  it('assembles families by name, each under one # TYPE, accounts in their order, # EOF last', async () => {
    const dir = folder();
    const spool = new OpenMetricsSpool(join(dir, 'x.om.parts'));
    spool.add(1, [
      series('cdn_edge_requests_total', 'b', 1, 60_000),
      series('cdn_edge_cache_hit_ratio', 'b', 0.5, 60_000),
    ]);
    spool.add(0, [series('cdn_edge_requests_total', 'a', 2, 60_000)]);
    await spool.write(spool.take());
    spool.add(0, [series('cdn_edge_requests_total', 'a', 3, 120_000)]);
    await spool.write(spool.take());
    await spool.assemble(join(dir, 'x.om'));
    expect(readFileSync(join(dir, 'x.om'), 'utf8')).toBe(
      [
        '# TYPE cdn_edge_cache_hit_ratio gauge',
        'cdn_edge_cache_hit_ratio{account="b",job="cdn-exporter-settled"} 0.5 60.000',
        '# TYPE cdn_edge_requests counter',
        'cdn_edge_requests_total{account="a",job="cdn-exporter-settled"} 2 60.000',
        'cdn_edge_requests_total{account="a",job="cdn-exporter-settled"} 3 120.000',
        'cdn_edge_requests_total{account="b",job="cdn-exporter-settled"} 1 60.000',
        '# EOF',
        '',
      ].join('\n'),
    );
  });

  it('on resume, cuts parts back to the sizes of the progress, removes parts made after it, refuses a short one', async () => {
    const dir = folder();
    const parts = join(dir, 'x.om.parts');
    const first = new OpenMetricsSpool(parts);
    first.add(0, [series('cdn_edge_requests_total', 'a', 1, 60_000)]);
    const taken = first.take();
    await first.write(taken);
    // Written after the progress was saved: lines of a later window, and a new family's part.
    first.add(0, [
      series('cdn_edge_requests_total', 'a', 2, 120_000),
      series('cdn_edge_cache_hit_ratio', 'a', 1, 120_000),
    ]);
    await first.write(first.take());

    const resumed = new OpenMetricsSpool(parts);
    await resumed.restore(taken.sizes);
    expect(existsSync(join(parts, 'cdn_edge_cache_hit_ratio.gauge.0'))).toBe(false);
    resumed.add(0, [series('cdn_edge_requests_total', 'a', 2, 120_000)]);
    await resumed.write(resumed.take());
    expect(
      readFileSync(join(parts, 'cdn_edge_requests.counter.0'), 'utf8').split('\n').filter(Boolean),
    ).toHaveLength(2);

    writeFileSync(join(parts, 'cdn_edge_requests.counter.0'), 'x');
    await expect(new OpenMetricsSpool(parts).restore(taken.sizes)).rejects.toThrow(
      /shorter than the progress file says/,
    );
  });

  it('holds lines up to the bound (api.max_body_bytes), then a window waits for them to be written', async () => {
    const spool = new OpenMetricsSpool(join(folder(), 'x.om.parts'));
    const one = [series('cdn_edge_requests_total', 'a', 1, 60_000)];
    const bytes = Buffer.byteLength(seriesLines(one[0]!));
    let flushes = 0;
    const sink = new FileSink(spool, 2 * bytes, async () => {
      flushes++;
      await spool.write(spool.take());
    });
    sink.put('a', 0, 60_000, one);
    sink.put('a', 0, 60_000, one);
    await sink.ready();
    expect([spool.buffered, flushes]).toEqual([2 * bytes, 0]);
    sink.put('a', 0, 60_000, one);
    await sink.ready();
    expect([spool.buffered, flushes]).toEqual([0, 1]);
  });
});
