/**
 * When the store may free a replaced body at once (./free-now.ts) instead of leaving it to the GC: once nothing can
 * read it any more. The store says which buffers it still holds (`held`); this keeps what it lent out (expositions
 * a response is writing or a gzip stream is reading), the bodies it retired, and the buffers a cut-off response may
 * still have handed to the transport, which are never freed here.
 */
import { freeNow } from './free-now.js';

/** What is lent: an exposition's chunks. */
export interface Lendable {
  readonly chunks: readonly Buffer[];
}

export class BodyLoans<E extends Lendable> {
  /** Expositions lent out (to responses writing them, to gzip streams reading them), with their holders. */
  private readonly lent = new Map<E, number>();
  /** Replaced bodies not freed yet: sweep() frees each once nothing holds it. */
  private readonly retired = new Set<Buffer>();
  /** Buffers a cut-off response may still have handed to the transport: never freed here, left to the GC. */
  private readonly unsafeToFree = new WeakSet<ArrayBufferLike>();

  /** `held`: every buffer the store itself still reads or serves (families' label sources, bodies, expositions). */
  constructor(private readonly held: (live: Set<ArrayBufferLike>) => void) {}

  lend(e: E): void {
    this.lent.set(e, (this.lent.get(e) ?? 0) + 1);
  }

  giveBack(e: E): void {
    const n = (this.lent.get(e) ?? 1) - 1;
    if (n > 0) {
      this.lent.set(e, n);
      return;
    }
    this.lent.delete(e);
    this.sweep();
  }

  /** A family's body left the store's table: it is freed by sweep() once nothing holds it. */
  retire(body: Buffer | undefined): void {
    if (body && body.length > 0) this.retired.add(body);
  }

  /** These chunks may still be read outside JavaScript (a transport, zlib): never freed here. */
  unsafe(chunks: readonly Buffer[]): void {
    for (const c of chunks) this.unsafeToFree.add(c.buffer);
  }

  /** Frees every retired body nothing can read any more. */
  sweep(): void {
    if (this.retired.size === 0) return;
    const live = new Set<ArrayBufferLike>();
    this.held(live);
    for (const e of this.lent.keys()) for (const c of e.chunks) live.add(c.buffer);
    for (const body of this.retired) {
      if (live.has(body.buffer)) continue;
      this.retired.delete(body);
      if (!this.unsafeToFree.has(body.buffer)) freeNow(body);
    }
  }
}
