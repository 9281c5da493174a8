/**
 * Reading an answer's body within its limits (api.max_body_bytes), for ./request.ts: as a stream, decoded as its
 * `Content-Encoding` says (gzip, deflate, br; undici does not decode by itself), and given up at the limit as sent
 * or once decoded, never buffered whole. A body over the limit is a `too_large` problem, one that does not decode or
 * does not match its content-length `malformed`; request.ts turns each into an ApiError.
 */
import type { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';

/** A body given up on for what it is (too big, undecodable), not for how the connection went. */
export class BodyProblem extends Error {
  constructor(
    readonly kind: 'too_large' | 'malformed',
    message: string,
  ) {
    super(message);
  }
}

/** Output chunk of the decoders: zlib's 16 KiB default makes a 22 MB answer 1,400 chunks to collect. */
const DECODED_CHUNK = 256 * 1024;

/** The decoders of a Content-Encoding, in the order to apply them (the header lists them as applied). */
function decodersFor(encoding: string | undefined): Transform[] {
  if (encoding === undefined) return [];
  const names = encoding
    .split(',')
    .map((e) => e.trim().toLowerCase())
    .filter((e) => e !== '' && e !== 'identity');
  return names.reverse().map((name) => {
    switch (name) {
      case 'gzip':
      case 'x-gzip':
        return createGunzip({ chunkSize: DECODED_CHUNK });
      case 'deflate':
        return createInflate({ chunkSize: DECODED_CHUNK });
      case 'br':
        return createBrotliDecompress({ chunkSize: DECODED_CHUNK });
      default:
        throw new BodyProblem('malformed', `unsupported content-encoding ${JSON.stringify(name)}`);
    }
  });
}

/**
 * A body of `declared` bytes (its Content-Length), read into one buffer of that size as it arrives: each chunk is
 * let go once copied, so a 22 MB answer costs 22 MB, not its chunks plus their concatenation. A body that runs
 * past its Content-Length is malformed (undici stops it first: it checks the length too); one that ends short is
 * what undici reports as an error of the stream, as before.
 */
async function readSized(body: Readable, declared: number): Promise<Uint8Array> {
  const out = Buffer.allocUnsafeSlow(declared);
  let at = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    if (at + chunk.length > declared)
      throw new BodyProblem('malformed', `body longer than its content-length (${declared} bytes)`);
    chunk.copy(out, at);
    at += chunk.length;
  }
  if (at !== declared)
    throw new BodyProblem('malformed', `body of ${at} bytes, content-length said ${declared}`);
  return out;
}

/**
 * Reads a body as a stream, decoding it as `encoding` says, and gives up (destroying the stream, which ends the
 * request) once it passes `max` bytes as sent or as decoded: a zip bomb stops at the limit, not in memory.
 */
export async function readBody(
  body: Readable,
  encoding: string | undefined,
  max: number,
  limitName: string,
  contentLength?: string,
): Promise<Uint8Array> {
  let decoders: Transform[];
  try {
    decoders = decodersFor(encoding);
  } catch (err) {
    body.on('error', () => {});
    body.destroy();
    throw err;
  }
  // The first error a decoder raised itself, as opposed to one pipeline handed it from the body (a reset, the
  // deadline): only the former means the body does not decode.
  let bodyFailed: unknown;
  body.once('error', (err) => {
    bodyFailed ??= err;
  });
  let decodeFailed: Error | undefined;
  for (const d of decoders)
    d.once('error', (err) => {
      if (err !== bodyFailed) decodeFailed ??= err;
    });
  let sent = 0;
  let size = 0;
  const chunks: Buffer[] = [];
  if (decoders.length === 0) {
    const declared = contentLength !== undefined && /^\d+$/.test(contentLength) ? Number(contentLength) : -1;
    if (declared > 0 && declared <= max) return readSized(body, declared);
    // Not encoded: read it directly (a throw out of the loop destroys the stream, which ends the request).
    for await (const chunk of body as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > max) throw new BodyProblem('too_large', `body of more than ${max} bytes (${limitName})`);
      chunks.push(chunk);
    }
    return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size);
  }
  const countSent = async function* (source: AsyncIterable<Buffer>) {
    for await (const chunk of source) {
      sent += chunk.length;
      if (sent > max) throw new BodyProblem('too_large', `body of more than ${max} bytes (${limitName})`);
      yield chunk;
    }
  };
  const collect = async (source: AsyncIterable<Buffer>) => {
    for await (const chunk of source) {
      size += chunk.length;
      if (size > max)
        throw new BodyProblem('too_large', `body decoded to more than ${max} bytes (${limitName})`);
      chunks.push(chunk);
    }
  };
  try {
    // pipeline's overloads do not cover a spread of transforms between two functions.
    await (pipeline as (...stages: unknown[]) => Promise<void>)(body, countSent, ...decoders, collect);
  } catch (err) {
    if (err instanceof BodyProblem) throw err;
    if (decodeFailed !== undefined && err !== bodyFailed)
      throw new BodyProblem(
        'malformed',
        `body does not decode as content-encoding ${encoding}: ${decodeFailed.message}`,
      );
    throw err;
  }
  return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size);
}
