/**
 * Frees a large buffer's memory at once instead of whenever a garbage collection finds it unreachable.
 *
 * At 1M series a family body is tens of MB, and a refresh replaces every body that changed. Left to the GC, the
 * old bodies (and the render buffers outgrown on the way) stayed resident beside the new ones until the next
 * major collection: that was most of the gap between steady and peak RSS (issue 15). Detaching the ArrayBuffer
 * (`transfer(0)`) hands its backing store back to the allocator on the spot, and leaves every view of it empty.
 *
 * Contract: the caller owns `view`'s memory outright. No other code may read it afterwards, and nothing
 * outside JavaScript may be using it (a socket write in progress, a zlib stream reading it): that would read
 * freed memory. The store proves this with its holders (series-store.ts); buffers it cannot prove free it leaves
 * to the GC.
 *
 * Small buffers are left alone: below FREE_MIN_BYTES freeing early saves nothing worth the care. Buffer's shared
 * pool (Buffer.allocUnsafe, Buffer.from) must never be detached; its size is Buffer.poolSize (8 KiB before Node 24,
 * 64 KiB on 24), so it can pass the size check, but Node makes it not detachable: `transfer` throws, and a slice
 * of it is left alone. Where the runtime has no `ArrayBuffer.prototype.transfer` (before Node 21), this does
 * nothing.
 */

export const FREE_MIN_BYTES = 64 * 1024;

type Transferable = ArrayBuffer & { transfer?: (length: number) => ArrayBuffer; readonly detached?: boolean };

/** Frees `view`'s whole ArrayBuffer now when it is large and not already freed; returns whether it did. */
export function freeNow(view: ArrayBufferView | undefined): boolean {
  if (view === undefined) return false;
  const ab = view.buffer as Transferable;
  if (!(ab instanceof ArrayBuffer) || ab.byteLength < FREE_MIN_BYTES || ab.detached === true) return false;
  if (typeof ab.transfer !== 'function') return false;
  try {
    ab.transfer(0);
  } catch {
    // Not detachable: Buffer's shared pool (see above), or a buffer a native part holds.
    return false;
  }
  return true;
}
