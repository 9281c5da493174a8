/**
 * The DVR codec (src/dvr/codec.ts): a stream's answer packed in the parse worker and unpacked on the event loop is
 * the answer the inline parser gives, key for key and in the same key order, its issues and unknown keys included;
 * a body that cannot be read is the same `malformed` ApiError from `pack` as from `parse`, never another throw.
 * Checked here on bodies drawn from a seeded generator, posted as postMessage posts them (test/helpers/codec-trip.ts:
 * the typed arrays moved, not copied). Through the real worker and the clients: test/offloop/dvr-recordings.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { dvrCodec } from '../../src/dvr/codec.js';
import { ABSENT, Draw, tripDrawn, viaPost, WRONG } from '../helpers/codec-trip.js';

const utf8 = new TextEncoder();
const NUMBERS = [0, -0, 1, 59.5, -3, 1_767_268_800, 2 ** 53, 1e300, ...WRONG];
const TEXTS = ['live/main', 'live/main', 'live/other', '', 'h1', 'dvr-\u00e9', '\ud800 x', ...WRONG];

/** A dvr-net answer of random shape; now and then not an object, or not JSON. */
function body(seed: number): string {
  const d = new Draw(seed);
  if (d.chance(0.05))
    return d.pick(['[1, 2]', '{"data": [', '', '"text"', '{"status":"Failed","description":"x"}']);
  const entry = () =>
    d.object({
      stream_name: d.pick(TEXTS),
      host: d.pick(TEXTS),
      is_alive: d.pick([true, false, ...WRONG]),
      dvr: d.chance(0.1)
        ? d.pick(WRONG)
        : d.object({
            enabled: d.pick([true, false, ...WRONG]),
            window: d.pick(NUMBERS),
            duration: d.pick(NUMBERS),
            from: d.pick(NUMBERS),
            ranges: d.chance(0.1)
              ? d.pick(WRONG)
              : d.list(4, () =>
                  d.chance(0.1) ? d.pick(WRONG) : { from: d.pick(NUMBERS), duration: d.pick(NUMBERS) },
                ),
            speed: d.chance(0.1) ? 2 : ABSENT,
          }),
      more: d.chance(0.1) ? 1 : ABSENT,
    });
  return JSON.stringify(
    d.object({
      status: d.pick(['Completed', ...WRONG]),
      stream_name: d.pick(TEXTS),
      data: d.chance(0.05) ? d.pick(WRONG) : d.list(5, () => (d.chance(0.1) ? d.pick(WRONG) : entry())),
      extra: d.chance(0.1) ? 'x' : ABSENT,
    }),
  );
}

describe('dvrCodec', () => {
  it('gives through the post what parse gives, for 400 drawn bodies (issues, unknown keys and errors included)', async () => {
    const reached = await tripDrawn(
      dvrCodec,
      400,
      body,
      (seed) => (seed % 3 === 0 ? undefined : 'live/main'),
      (r) => r.issues.length > 0,
    );
    // The draw reached every kind of outcome.
    expect(reached).toEqual(['clean', 'issues', 'malformed']);
  });

  it('keeps an optional number of 0 apart from one that is absent', async () => {
    const text = JSON.stringify({
      stream_name: 'live/main',
      data: [
        {
          stream_name: 'live/main',
          host: 'a',
          is_alive: true,
          dvr: { enabled: true, window: 0, duration: 0, from: 0, ranges: [] },
        },
        { stream_name: 'live/main', host: 'b', is_alive: false, dvr: { enabled: false, ranges: [] } },
      ],
    });
    const r = await viaPost(dvrCodec, utf8.encode(text), 'live/main');
    expect(r.entries.map((e) => e.dvr)).toStrictEqual([
      { enabled: true, ranges: [], window: 0, duration: 0, from: 0 },
      { enabled: false, ranges: [] },
    ]);
    expect(r).toStrictEqual(dvrCodec.parse(utf8.encode(text), 'live/main'));
  });
});
