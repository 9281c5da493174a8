/**
 * A counter's start in the two formats that carry it (issue 33, row 4): OpenMetrics' `_created` sample and
 * protobuf's `Counter.created_timestamp` say the same for every start a series may be given, or both leave it out.
 * The store keeps whole seconds from 1 to 2^32 - 1; before, a larger start wrapped (2^32 + 1000 s was served as
 * 1970-01-01T00:16:40Z) and a start of 0 was `_created 0` in OpenMetrics while protobuf left it out.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { startSecondsOf } from '../../src/store/series-index.js';
import { SeriesStore } from '../../src/store/series-store.js';
import { Scrape } from '../helpers/exposition.js';
import { decodeProtobuf } from '../helpers/protobuf.js';

const T0 = Date.UTC(2026, 6, 1, 0, 0, 0);

/** The start each format serves for a counter created with `startMs` (undefined: none). */
function served(startMs: number): { openMetrics: number | undefined; protobuf: number | undefined } {
  const store = new SeriesStore({ clock: { now: () => T0 } });
  const f = store.family({ name: 'cdn_x_total', help: 'X.', type: 'counter', labelNames: ['account'] });
  f.add(f.slot(['acme'], startMs), 5);
  const om = Scrape.of(store.render('openmetrics').toString());
  expect(om.value('cdn_x_total', { account: 'acme' })).toBe(5);
  const [family] = decodeProtobuf(store.render('protobuf'));
  expect(family!.metrics[0]!.counter).toBe(5);
  return {
    openMetrics: om.value('cdn_x_created', { account: 'acme' }),
    protobuf: family!.metrics[0]!.created,
  };
}

const S = 1000;

describe('counter starts in OpenMetrics and protobuf', () => {
  it.each([
    ['now + 10 years', T0 + 10 * 365 * 86_400 * S, Math.floor(T0 / S) + 10 * 365 * 86_400],
    ['the last second the store keeps (2106)', (2 ** 32 - 1) * S, 2 ** 32 - 1],
    ['2^32 + 1000 s', (2 ** 32 + 1000) * S, undefined],
    ['milliseconds read as seconds', T0 * S, undefined],
    ['1e15 s', 1e15 * S, undefined],
    ['1e308 s', 1e308 * S, undefined],
    ['0', 0, undefined],
    ['1 s after the epoch', S, 1],
    ['negative', -60 * S, undefined],
    ['not a number', Number.NaN, undefined],
  ])('%s: the same in both formats', (_what, startMs, seconds) => {
    expect(served(startMs)).toEqual({ openMetrics: seconds, protobuf: seconds });
  });

  it('agree for every start a series may be given: the same whole seconds, or none in both', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.double(),
          fc.integer({ min: -(2 ** 45), max: 2 ** 45 }),
          fc.integer({ min: 0, max: 2 ** 32 + 5 }).map((s) => s * S),
        ),
        (startMs) => {
          const { openMetrics, protobuf } = served(startMs);
          expect(openMetrics).toBe(protobuf);
          const kept = startSecondsOf(startMs);
          expect(protobuf).toBe(kept === 0 ? undefined : kept);
          if (kept !== 0) {
            expect(kept).toBe(Math.floor(startMs / S));
            expect(kept).toBeGreaterThanOrEqual(1);
            expect(kept).toBeLessThanOrEqual(2 ** 32 - 1);
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});
