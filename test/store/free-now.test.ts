/**
 * freeNow (src/store/free-now.ts): a large buffer's memory handed back at once, every view of it left empty; small
 * buffers (below FREE_MIN_BYTES, where Buffer's shared pool lives) and memory JavaScript does not own alone
 * (a SharedArrayBuffer) are never touched. How the store decides that nothing reads a body any more:
 * test/store/body-loans.test.ts and free-bodies.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { FREE_MIN_BYTES, freeNow } from '../../src/store/free-now.js';

describe('freeNow', () => {
  it('frees a buffer of FREE_MIN_BYTES or more: true, and every view of its memory is empty', () => {
    const body = Buffer.alloc(FREE_MIN_BYTES, 'x');
    const view = new Uint8Array(body.buffer, 100, 10);
    expect(freeNow(body)).toBe(true);
    expect(body.length).toBe(0);
    expect(body.buffer.byteLength).toBe(0);
    expect(view.length).toBe(0);
  });

  it('frees the whole memory a typed array view of part of it stands on', () => {
    const values = new Float64Array(FREE_MIN_BYTES / 8 + 1);
    const part = values.subarray(0, 4);
    expect(freeNow(part)).toBe(true);
    expect(values.length).toBe(0);
  });

  it('leaves a buffer one byte under FREE_MIN_BYTES alone', () => {
    const small = Buffer.alloc(FREE_MIN_BYTES - 1, 'y');
    expect(freeNow(small)).toBe(false);
    expect(small.length).toBe(FREE_MIN_BYTES - 1);
  });

  // Node 24's pool is 64 KiB (Buffer.poolSize), as large as FREE_MIN_BYTES: a pool slice passes the size check, and
  // only the pool's being not detachable keeps it whole.
  it('leaves a slice of Buffer’s shared pool alone, whatever the pool size: false, its neighbours intact', () => {
    const pooled = Buffer.from('a few bytes from the pool');
    const neighbour = Buffer.from('another slice of it');
    expect(pooled.buffer).toBe(neighbour.buffer);
    expect(freeNow(pooled)).toBe(false);
    expect(neighbour.toString()).toBe('another slice of it');
  });

  it('does nothing twice, nor for nothing, nor for memory shared with other threads', () => {
    const body = Buffer.alloc(FREE_MIN_BYTES);
    expect(freeNow(body)).toBe(true);
    expect(freeNow(body)).toBe(false);
    expect(freeNow(undefined)).toBe(false);
    const shared = new Uint8Array(new SharedArrayBuffer(FREE_MIN_BYTES * 2));
    expect(freeNow(shared)).toBe(false);
    expect(shared.length).toBe(FREE_MIN_BYTES * 2);
  });
});
