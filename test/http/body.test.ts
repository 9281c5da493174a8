/**
 * Reading an answer's body within api.max_body_bytes (src/http/body.ts), as the request helper does with every
 * upstream answer: the bytes as sent, or decoded as Content-Encoding says (gzip, deflate, br, and a list of them);
 * a body over the limit, as sent or once decoded (a zip bomb), given up at the limit as `too_large`, the stream
 * destroyed; one that does not decode, names an encoding nobody supports or does not match its content-length
 * `malformed`; a failure of the connection itself passed on as it is. Through HTTP: request.test.ts.
 */
import { Readable } from 'node:stream';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { BodyProblem, readBody } from '../../src/http/body.js';

const LIMIT = 'api.max_body_bytes';

/** A body arriving in chunks of `size` bytes. */
function stream(bytes: Uint8Array, size = 1000): Readable {
  const chunks: Buffer[] = [];
  for (let i = 0; i < bytes.length; i += size) chunks.push(Buffer.from(bytes.subarray(i, i + size)));
  return Readable.from(chunks, { objectMode: false });
}

async function problem(p: Promise<unknown>): Promise<BodyProblem> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(BodyProblem);
  return err as BodyProblem;
}

const TEXT = Buffer.from(
  JSON.stringify(Array.from({ length: 2000 }, (_, i) => ({ resource: `r${i}`, value: i }))),
);

describe('readBody', () => {
  it('reads a plain body whole, with or without its content-length', async () => {
    expect(Buffer.from(await readBody(stream(TEXT), undefined, TEXT.length, LIMIT)).equals(TEXT)).toBe(true);
    const sized = await readBody(stream(TEXT), undefined, TEXT.length, LIMIT, String(TEXT.length));
    expect(Buffer.from(sized).equals(TEXT)).toBe(true);
  });

  it('gives up on a plain body one byte over the limit, destroying the stream', async () => {
    const body = stream(TEXT);
    const p = await problem(readBody(body, undefined, TEXT.length - 1, LIMIT));
    expect(p.kind).toBe('too_large');
    expect(p.message).toBe(`body of more than ${TEXT.length - 1} bytes (api.max_body_bytes)`);
    expect(body.destroyed).toBe(true);
  });

  it('refuses a body that does not match its content-length', async () => {
    const longer = await problem(readBody(stream(TEXT), undefined, 1e9, LIMIT, String(TEXT.length - 10)));
    expect(longer).toMatchObject({
      kind: 'malformed',
      message: `body longer than its content-length (${TEXT.length - 10} bytes)`,
    });
    const shorter = await problem(readBody(stream(TEXT), undefined, 1e9, LIMIT, String(TEXT.length + 10)));
    expect(shorter).toMatchObject({
      kind: 'malformed',
      message: `body of ${TEXT.length} bytes, content-length said ${TEXT.length + 10}`,
    });
  });

  it('decodes gzip, deflate, br and a list of encodings in the order they were applied', async () => {
    const cases: Array<[string, Uint8Array]> = [
      ['gzip', gzipSync(TEXT)],
      ['x-gzip', gzipSync(TEXT)],
      ['deflate', deflateSync(TEXT)],
      ['br', brotliCompressSync(TEXT)],
      ['identity', TEXT],
      // Applied gzip first, then br: decoded br first.
      ['gzip, br', brotliCompressSync(gzipSync(TEXT))],
      ['GZIP', gzipSync(TEXT)],
    ];
    for (const [encoding, sent] of cases) {
      const got = await readBody(stream(sent, 100), encoding, TEXT.length, LIMIT);
      expect(Buffer.from(got).equals(TEXT), encoding).toBe(true);
    }
  });

  it('stops a small body that decodes past the limit at the limit (a zip bomb), and one too big as sent', async () => {
    const bomb = gzipSync(Buffer.alloc(64 * 1024 * 1024));
    expect(bomb.length).toBeLessThan(1024 * 1024);
    const decoded = await problem(readBody(stream(bomb, 16 * 1024), 'gzip', 1024 * 1024, LIMIT));
    expect(decoded).toMatchObject({
      kind: 'too_large',
      message: 'body decoded to more than 1048576 bytes (api.max_body_bytes)',
    });
    const sent = await problem(readBody(stream(gzipSync(TEXT)), 'gzip', 100, LIMIT));
    expect(sent).toMatchObject({
      kind: 'too_large',
      message: 'body of more than 100 bytes (api.max_body_bytes)',
    });
  });

  it('refuses a body that does not decode, and an encoding it does not know, closing the stream', async () => {
    const garbage = await problem(readBody(stream(Buffer.from('not gzip at all')), 'gzip', 1e6, LIMIT));
    expect(garbage.kind).toBe('malformed');
    expect(garbage.message).toMatch(/^body does not decode as content-encoding gzip: /);
    const body = stream(TEXT);
    const unknown = await problem(readBody(body, 'zstd', 1e6, LIMIT));
    expect(unknown).toMatchObject({ kind: 'malformed', message: 'unsupported content-encoding "zstd"' });
    expect(body.destroyed).toBe(true);
  });

  it('passes a failure of the connection on as it is, not as a body that does not decode', async () => {
    const reset = Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
    const gz = gzipSync(TEXT);
    async function* cut() {
      yield gz.subarray(0, 50);
      throw reset;
    }
    for (const encoding of [undefined, 'gzip']) {
      const err = await readBody(Readable.from(cut()), encoding, 1e6, LIMIT).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err, String(encoding)).toBe(reset);
    }
  });
});
