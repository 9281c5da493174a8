/**
 * BodyLoans (src/store/body-loans.ts): a replaced body is freed at once only when nothing can read it any more:
 * not the store itself (`held`), not an exposition lent to a response or a gzip stream (counted per lend), and
 * never a buffer a cut-off response may have handed to the transport. What the store makes of it through its
 * exports: test/store/free-bodies.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { BodyLoans, type Lendable } from '../../src/store/body-loans.js';
import { FREE_MIN_BYTES } from '../../src/store/free-now.js';

/** A body large enough to be freed early, with text in it. */
const body = (text: string) => Buffer.alloc(FREE_MIN_BYTES, text);
const freed = (b: Buffer) => b.buffer.byteLength === 0;

function loans() {
  const held = new Set<Buffer>();
  const l = new BodyLoans<Lendable>((live) => {
    for (const b of held) live.add(b.buffer);
  });
  return { l, held };
}

describe('BodyLoans', () => {
  it('frees a retired body nothing holds at the next sweep', () => {
    const { l } = loans();
    const old = body('a');
    l.retire(old);
    expect(freed(old)).toBe(false);
    l.sweep();
    expect(freed(old)).toBe(true);
  });

  it('never frees a body the store still holds, and frees it once the store lets it go', () => {
    const { l, held } = loans();
    const b = body('b');
    held.add(b);
    l.retire(b);
    l.sweep();
    expect(freed(b)).toBe(false);
    expect(b.toString('utf8', 0, 1)).toBe('b');
    held.delete(b);
    l.sweep();
    expect(freed(b)).toBe(true);
  });

  it('keeps a lent body until every lend of it is given back, then frees it on the last giveBack', () => {
    const { l } = loans();
    const b = body('c');
    const exposition = { chunks: [Buffer.from('# HELP\n'), b] };
    l.lend(exposition);
    l.lend(exposition);
    l.retire(b);
    l.sweep();
    expect(freed(b)).toBe(false);
    l.giveBack(exposition);
    expect(freed(b)).toBe(false);
    expect(b.toString('utf8', 0, 1)).toBe('c');
    l.giveBack(exposition);
    expect(freed(b)).toBe(true);
  });

  it('leaves to the GC a body a cut-off response may still have given the transport', () => {
    const { l } = loans();
    const b = body('d');
    const exposition = { chunks: [b] };
    l.lend(exposition);
    l.unsafe(exposition.chunks);
    l.retire(b);
    l.giveBack(exposition);
    l.sweep();
    expect(freed(b)).toBe(false);
    expect(b.toString('utf8', 0, 1)).toBe('d');
  });

  it('keeps a body that shares its memory with a lent one (a view of the same buffer)', () => {
    const { l } = loans();
    const whole = body('e');
    const view = whole.subarray(0, 10);
    const exposition = { chunks: [view] };
    l.lend(exposition);
    l.retire(whole);
    l.sweep();
    expect(freed(whole)).toBe(false);
    l.giveBack(exposition);
    expect(freed(whole)).toBe(true);
  });

  it('takes an empty or missing body as nothing to retire', () => {
    const { l } = loans();
    l.retire(undefined);
    l.retire(Buffer.alloc(0));
    expect(() => l.sweep()).not.toThrow();
  });
});
