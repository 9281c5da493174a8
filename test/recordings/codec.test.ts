/**
 * The recordings codec (src/recordings/codec.ts): a listing packed in the parse worker and unpacked on the event
 * loop is the answer the inline parser gives, key for key and in the same key order, a key the parser set to
 * undefined (a bad value) included, with its issues and unknown keys; a body that cannot be read is the same
 * `malformed` ApiError from `pack` as from `parse`, never another throw. Checked here on bodies drawn from a seeded
 * generator, posted as postMessage posts them (test/helpers/codec-trip.ts: the typed arrays moved, not copied).
 * Through the real worker and the clients: test/offloop/dvr-recordings.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { recordingsCodec } from '../../src/recordings/codec.js';
import { RECORDING_STATUSES } from '../../src/recordings/response.js';
import { ABSENT, Draw, tripDrawn, viaPost, WRONG } from '../helpers/codec-trip.js';

const utf8 = new TextEncoder();
const TEXTS = ['1004', '', 'live.example', '/live/main.m3u8', 'caf\u00e9', '\ud800 x', ...WRONG];
const NUMBERS = [0, -1, 1800, 43200, 1.5, -5, 2 ** 53, ...WRONG];
const BOOLS = [true, false, ...WRONG];
const STATUSES = [...RECORDING_STATUSES, 'paused', ...WRONG];
const TIMES = ['2026-01-01T12:00:00Z', '2026-01-01T13:00:00.250Z', '2026-02-31T10:00:00Z', 'soon', ...WRONG];

/** A recorder-cloud listing of random shape; now and then not a list, or not JSON. */
function body(seed: number): string {
  const d = new Draw(seed);
  if (d.chance(0.05)) return d.pick(['{"settings": []}', '[{"id": ', '', '7']);
  const setting = (i: number) =>
    d.object({
      id: d.chance(0.9) ? `rec-${d.chance(0.1) ? 0 : i}` : d.pick(['', ...WRONG]),
      resource_id: d.pick(TEXTS),
      account_name: d.pick(['acme', 'acme', 'other', ...WRONG]),
      source_domain: d.pick(TEXTS),
      source_path: d.pick(TEXTS),
      stream_type: d.pick(['long', 'short', ...WRONG]),
      launch_type: d.pick(['button', 'stream_start', 'schedule', ...WRONG]),
      stop_timeout: d.pick(NUMBERS),
      storage_time: d.pick(NUMBERS),
      dvr_enabled: d.pick(BOOLS),
      dvr_window: d.pick(NUMBERS),
      smil: d.pick(BOOLS),
      active: d.pick(BOOLS),
      status: d.pick(STATUSES),
      path: d.pick(TEXTS),
      qualities: d.chance(0.2)
        ? d.pick(WRONG)
        : Object.fromEntries(d.list(3, (q) => [`https://live.example/${q}.m3u8`, d.pick(['720p', '', 5])])),
      records: d.chance(0.1)
        ? d.pick(WRONG)
        : d.list(4, () =>
            d.chance(0.1)
              ? d.pick(WRONG)
              : d.object({
                  start: d.pick(TIMES),
                  stop: d.pick(TIMES),
                  init_path: d.pick(TEXTS),
                  status: d.pick(STATUSES),
                  more: d.chance(0.1) ? 1 : ABSENT,
                }),
          ),
      color: d.chance(0.1) ? 'red' : ABSENT,
    });
  return JSON.stringify(d.list(5, (i) => (d.chance(0.1) ? d.pick(WRONG) : setting(i))));
}

describe('recordingsCodec', () => {
  it('gives through the post what parse gives, for 400 drawn bodies (issues, unknown keys and errors included)', async () => {
    const reached = await tripDrawn(
      recordingsCodec,
      400,
      body,
      (seed) => (seed % 3 === 0 ? undefined : 'acme'),
      (r) => r.issues.length > 0,
    );
    // The draw reached every kind of outcome.
    expect(reached).toEqual(['clean', 'issues', 'malformed']);
  });

  it('keeps a key the parser set to undefined, and null qualities and path apart from empty ones', async () => {
    const text = JSON.stringify([
      { id: 'a', resource_id: 5, qualities: null, path: null, records: [] },
      { id: 'b', qualities: {}, path: '', records: [{}] },
    ]);
    const r = await viaPost(recordingsCodec, utf8.encode(text), 'acme');
    expect(Object.hasOwn(r.settings[0]!, 'resourceId')).toBe(true);
    expect(r.settings[0]!.resourceId).toBeUndefined();
    expect(Object.hasOwn(r.settings[1]!, 'resourceId')).toBe(false);
    expect(r.settings.map((s) => [s.qualities, s.path, s.records])).toStrictEqual([
      [null, null, []],
      [{}, '', [{}]],
    ]);
    expect(r).toStrictEqual(recordingsCodec.parse(utf8.encode(text), 'acme'));
  });
});
