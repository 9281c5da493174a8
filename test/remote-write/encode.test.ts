import fc from 'fast-check';
import { compressSync } from 'snappy';
import { describe, expect, it } from 'vitest';
import {
  countSamples,
  cutRequests,
  encodeRequestBody,
  encodeWriteRequest,
} from '../../src/remote-write/encode.js';
import type { SeriesSamples } from '../../src/remote-write/types.js';
import { decodeWriteRequest, seriesKey } from '../helpers/remote-write-receiver.js';

const labelName = fc.stringMatching(/^[a-z_][a-z0-9_]{0,8}$/);
const seriesArb: fc.Arbitrary<SeriesSamples> = fc.record({
  labels: fc
    .uniqueArray(fc.tuple(labelName, fc.string({ maxLength: 12 })), { selector: (l) => l[0], maxLength: 5 })
    .map((ls) => [
      ['__name__', 'cdn_edge_requests_total'] as const,
      ...ls.filter((l) => l[0] !== '__name__' && l[0] !== 'series_no'),
    ]),
  samples: fc.array(
    fc.record({
      value: fc.double({ noNaN: true }),
      // Negative (before 1970) too: an int64's 10-byte varint.
      timestampMs: fc.integer({ min: -(2 ** 52), max: 2 ** 52 }),
    }),
    { maxLength: 7 },
  ),
});

/** Decodes every request of `series` cut at `max`, as a receiver would. */
function roundTrip(series: readonly SeriesSamples[], max: number) {
  const requests = [...cutRequests(series, max)].map((span) => ({
    span,
    decoded: decodeWriteRequest(compressSync(encodeWriteRequest(series, span))),
  }));
  return requests;
}

describe('remote-write encoding', () => {
  it('writes a WriteRequest a protobufjs reader decodes to the same labels (sorted) and samples', () => {
    const series: SeriesSamples[] = [
      {
        labels: [
          ['resource', '123'],
          ['__name__', 'cdn_edge_requests_total'],
          ['account', 'acme'],
          ['job', 'cdn-exporter-settled'],
        ],
        samples: [
          { value: 0, timestampMs: 1_767_225_600_000 },
          { value: 1234.5, timestampMs: 1_767_225_900_000 },
        ],
      },
      { labels: [['__name__', 'up']], samples: [{ value: -1e-300, timestampMs: 1 }] },
    ];
    const [req] = roundTrip(series, 5000);
    expect(req!.decoded).toEqual([
      {
        labels: [
          ['__name__', 'cdn_edge_requests_total'],
          ['account', 'acme'],
          ['job', 'cdn-exporter-settled'],
          ['resource', '123'],
        ],
        samples: [
          { value: 0, timestampMs: 1_767_225_600_000 },
          { value: 1234.5, timestampMs: 1_767_225_900_000 },
        ],
      },
      { labels: [['__name__', 'up']], samples: [{ value: -1e-300, timestampMs: 1 }] },
    ]);
    // The caller's labels are not reordered in place.
    expect(series[0]!.labels[0]![0]).toBe('resource');
  });

  it('keeps non-ASCII label values and NaN (a stale marker) as they are', async () => {
    const series: SeriesSamples[] = [
      {
        labels: [
          ['__name__', 'x'],
          ['name', 'Ünïcødé ✓'],
          ['long', 'x'.repeat(300)],
        ],
        samples: [{ value: Number.NaN, timestampMs: 5 }],
      },
    ];
    const span = [...cutRequests(series, 10)][0]!;
    const [one] = decodeWriteRequest(Buffer.from(await encodeRequestBody(series, span)));
    expect(one!.labels.slice(1)).toEqual([
      ['long', 'x'.repeat(300)],
      ['name', 'Ünïcødé ✓'],
    ]);
    expect(one!.samples[0]!.value).toBeNaN();
  });

  it('cuts requests of at most max samples, a series split across requests in order, none lost', () => {
    fc.assert(
      fc.property(fc.array(seriesArb, { maxLength: 12 }), fc.integer({ min: 1, max: 9 }), (drawn, max) => {
        // Each series its own: a label of its index (named to sort anywhere among the others).
        const series = drawn.map((s, i) => ({
          ...s,
          labels: [...s.labels, ['series_no', String(i)] as const],
        }));
        const requests = roundTrip(series, max);
        const total = countSamples(series);
        expect(requests.reduce((n, r) => n + r.span.samples, 0)).toBe(total);
        const seen = new Map<string, SeriesSamples['samples'][number][]>();
        for (const [i, r] of requests.entries()) {
          const n = r.decoded.reduce((k, s) => k + s.samples.length, 0);
          expect(n).toBe(r.span.samples);
          expect(n).toBeLessThanOrEqual(max);
          // Every request but the last is full.
          if (i < requests.length - 1) expect(n).toBe(max);
          for (const s of r.decoded) {
            expect(s.samples.length).toBeGreaterThan(0);
            const names = s.labels.map((l) => l[0]);
            expect(names).toEqual([...names].sort());
            const key = seriesKey(s.labels);
            seen.set(key, [...(seen.get(key) ?? []), ...s.samples]);
          }
        }
        for (const s of series) {
          if (s.samples.length === 0) continue;
          const sorted = [...s.labels].sort((a, b) => (a[0] < b[0] ? -1 : 1));
          expect(seen.get(seriesKey(sorted))).toEqual(s.samples);
        }
      }),
      { numRuns: 200 },
    );
  });

  it('refuses a max below one sample', () => {
    expect(() => [...cutRequests([], 0)]).toThrow(RangeError);
  });
});
