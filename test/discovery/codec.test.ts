/**
 * The inventory codec (src/discovery/codec.ts): a listing packed in the parse worker (the names as one string with
 * their lengths, the active flags) and unpacked on the event loop is the list the inline parser gives, names of
 * any UTF-16 length included; a body that is not a list is the same `malformed` ApiError from `pack` as from
 * `parse`. `inventoryParser` is the inventory client's body parser from a pool: it asks the pool for this codec.
 * Through the real worker: test/offloop/dvr-recordings.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { inventoryCodec, inventoryParser } from '../../src/discovery/codec.js';
import { Draw, inlineParsers, tripDrawn, viaPost, WRONG } from '../helpers/codec-trip.js';

const utf8 = new TextEncoder();
const NAMES = [
  'acme',
  ' spaced ',
  '',
  'b\u00e9ta',
  '\ud83d\ude00\ud83d\ude00',
  '\ud800',
  'x'.repeat(300),
  ...WRONG,
];

/** An inventory answer of random shape: a list, a `{data: [...]}` wrapper, or neither. */
function body(seed: number): string {
  const d = new Draw(seed);
  if (d.chance(0.05)) return d.pick(['{"description":"nope"}', '[{"name":', '', '"x"']);
  const list = d.list(6, () =>
    d.chance(0.1)
      ? d.pick(WRONG)
      : d.object({
          name: d.pick(NAMES),
          status: d.pick(['active', 'ACTIVE ', 'blocked', ...WRONG]),
          utoken: 'u',
        }),
  );
  return JSON.stringify(d.chance(0.2) ? { data: list } : list);
}

describe('inventoryCodec', () => {
  it('gives through the post what parse gives, for 300 drawn bodies (skipped elements and errors included)', async () => {
    const reached = await tripDrawn(
      inventoryCodec,
      300,
      body,
      () => undefined,
      (r) => r.issues > 0,
    );
    // The draw reached every kind of outcome.
    expect(reached).toEqual(['clean', 'issues', 'malformed']);
  });

  it('slices names of every length back apart, the neighbours untouched', async () => {
    const names = ['\ud83d\ude00', 'a', 'b\u00e9ta', 'x'.repeat(10_000), 'z'];
    const text = JSON.stringify(names.map((name, i) => ({ name, status: i % 2 ? 'active' : 'blocked' })));
    expect(await viaPost(inventoryCodec, utf8.encode(text), undefined)).toEqual({
      accounts: names.map((name, i) => ({ name, active: i % 2 === 1 })),
      issues: 0,
    });
  });
});

describe('inventoryParser', () => {
  it("asks the pool for the inventory codec's parser and reads a body with it", async () => {
    const { parsers: inline, asked } = inlineParsers();
    const parse = inventoryParser(inline);
    expect(asked).toEqual([inventoryCodec]);
    const text = JSON.stringify([{ name: 'acme', status: 'active' }, { status: 'active' }]);
    await expect(parse(utf8.encode(text))).resolves.toEqual({
      accounts: [{ name: 'acme', active: true }],
      issues: 1,
    });
  });
});
