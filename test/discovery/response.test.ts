/**
 * The inventory answer (src/discovery/response.ts) as discovery reads it: the documented array or a {data}
 * wrapper, each account's name and whether it is active, elements without a name counted and skipped, and the
 * per-account token (`utoken`) never kept.
 */
import { describe, expect, it } from 'vitest';
import { parseInventory } from '../../src/discovery/response.js';

describe('parseInventory', () => {
  it('reads the documented array, a {data} wrapper, and skips elements without a name', () => {
    expect(
      parseInventory([
        { status: 'active', utoken: 'x', uid: '1-1-a', name: 'a' },
        { status: 'Active', name: 'b' },
        { status: 'inactive', name: 'c' },
        { name: 'd' },
        { status: 'active' },
        'junk',
      ]),
    ).toEqual({
      accounts: [
        { name: 'a', active: true },
        { name: 'b', active: true },
        { name: 'c', active: false },
        { name: 'd', active: false },
      ],
      issues: 2,
    });
    expect(parseInventory({ data: [{ status: 'active', name: 'e' }] }).accounts).toEqual([
      { name: 'e', active: true },
    ]);
    expect(() => parseInventory({ accounts: [] })).toThrow(/not a JSON array/);
    // utoken is never kept.
    expect(
      JSON.stringify(parseInventory([{ status: 'active', utoken: 'SECRETISH', name: 'a' }])),
    ).not.toContain('SECRETISH');
  });
});
