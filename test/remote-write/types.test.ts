/**
 * The remote-write contract's one value (src/remote-write/types.ts): `RemoteWriterClosed`, what room() rejects with
 * once the writer is closed, so a caller waiting for room tells "no room will come" from an abort by its type,
 * and a log line names it. (That WriteQueue rejects with it: test/remote-write/queue.test.ts and index.test.ts.)
 */
import { describe, expect, it } from 'vitest';
import { RemoteWriterClosed } from '../../src/remote-write/types.js';

describe('RemoteWriterClosed', () => {
  it('is an Error a caller tells apart by its type and name, and reads as what happened', () => {
    const err = new RemoteWriterClosed();
    expect(err).toBeInstanceOf(Error);
    expect(err).toBeInstanceOf(RemoteWriterClosed);
    expect(err.name).toBe('RemoteWriterClosed');
    expect(String(err)).toBe('RemoteWriterClosed: the remote writer is closed');
    // Not an abort: a caller that stops on AbortError must not mistake one for the other.
    expect(err.name).not.toBe('AbortError');
    expect(new Error('x')).not.toBeInstanceOf(RemoteWriterClosed);
  });
});
