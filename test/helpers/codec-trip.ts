/**
 * An answer's trip through a codec (src/offloop/packing.ts's AnswerCodec) as the parse worker makes it, without the
 * worker: packed, posted with its transferables (structuredClone with `transfer`, what postMessage does), unpacked.
 * And bodies drawn from a seeded generator, each field good, bad, absent or of another type, for the codecs'
 * promise: what comes back equals what the inline parser gives, and a bad body is the same `malformed` ApiError.
 */
import { expect } from 'vitest';
import { ApiError } from '../../src/http/errors.js';
import type { AnswerCodec } from '../../src/offloop/packing.js';
import type { ApiCodec, BodyParsers } from '../../src/poll/api-module.js';
import { mulberry32 } from '../../src/simulator/random.js';

/** What a parse gives: the value and its JSON (key order), or the ApiError's fields, or another throw. */
export async function outcome(parse: () => unknown): Promise<unknown> {
  try {
    const value = await parse();
    return { value, text: JSON.stringify(value) };
  } catch (err) {
    if (!(err instanceof ApiError)) return { thrown: String(err) };
    return { error: { api: err.api, kind: err.kind, detail: err.detail } };
  }
}

/**
 * `bytes` through `codec` as through the worker: pack, post (every transferable moved, so left detached here),
 * unpack. Throws what pack throws.
 */
export async function viaPost<Arg, Answer, Packed>(
  codec: AnswerCodec<Arg, Answer, Packed>,
  bytes: Uint8Array,
  arg: Arg,
): Promise<Answer> {
  const packed = codec.pack(bytes, arg);
  const transfer = codec.transferables(packed);
  const posted = structuredClone(packed, { transfer });
  for (const b of transfer) expect(b.byteLength, 'a transferable left behind, copied').toBe(0);
  return codec.unpack(posted);
}

/** Leaves a key out of a drawn object. */
export const ABSENT = Symbol('absent');

/** A seeded draw of body parts. */
export class Draw {
  private readonly next: () => number;

  constructor(seed: number) {
    this.next = mulberry32(seed);
  }

  /** True with probability p. */
  chance(p: number): boolean {
    return this.next() < p;
  }

  pick<T>(values: readonly T[]): T {
    return values[Math.floor(this.next() * values.length)]!;
  }

  /** 0..max items made by `item`. */
  list<T>(max: number, item: (i: number) => T): T[] {
    return Array.from({ length: Math.floor(this.next() * (max + 1)) }, (_, i) => item(i));
  }

  /** An object of the pairs whose value is not ABSENT. */
  object(pairs: Record<string, unknown>): Record<string, unknown> {
    return Object.fromEntries(Object.entries(pairs).filter(([, v]) => v !== ABSENT));
  }
}

/** Values of the wrong type, or none, mixed into any field. */
export const WRONG = [null, true, 'x', 7, [], {}, ABSENT] as const;

/**
 * For the bodies `body(1..count)` draws: through the post the same outcome as inline, a body that cannot be read
 * `malformed` and nothing else thrown. Returns the outcomes the draw reached, sorted (`clean`, `issues`,
 * `malformed`), for a guard that it reached every one.
 */
export async function tripDrawn<Arg, Answer, Packed>(
  codec: AnswerCodec<Arg, Answer, Packed>,
  count: number,
  body: (seed: number) => string,
  arg: (seed: number) => Arg,
  hasIssues: (answer: Answer) => boolean,
): Promise<string[]> {
  const utf8 = new TextEncoder();
  const kinds = new Set<string>();
  for (let seed = 1; seed <= count; seed++) {
    const text = body(seed);
    const inline = await outcome(() => codec.parse(utf8.encode(text), arg(seed)));
    const posted = await outcome(() => viaPost(codec, utf8.encode(text), arg(seed)));
    expect(posted, text).toStrictEqual(inline);
    expect(inline, text).not.toHaveProperty('thrown');
    const o = inline as { value?: Answer; error?: { kind: string } };
    if (o.error) expect(o.error.kind, text).toBe('malformed');
    kinds.add(o.error ? 'malformed' : hasIssues(o.value!) ? 'issues' : 'clean');
  }
  return [...kinds].sort();
}

/** BodyParsers (src/poll/api-module.ts) that parse inline, noting each codec a parser was asked for. */
export function inlineParsers(): { parsers: BodyParsers; asked: ApiCodec<never, unknown>[] } {
  const asked: ApiCodec<never, unknown>[] = [];
  const parsers: BodyParsers = {
    parser: (codec) => {
      asked.push(codec as ApiCodec<never, unknown>);
      return async (bytes, arg) => codec.parse(bytes, arg);
    },
  };
  return { parsers, asked };
}
