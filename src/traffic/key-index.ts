/**
 * The key index of ./side-series.ts: small integers for the keys of keyed families (status codes, classes, size
 * ranges), a few dozen in all, shared by every resource, so a resource's slots of a keyed family are an array
 * indexed by them.
 */
export class KeyIndex {
  private readonly map = new Map<string, number>();
  readonly keys: string[] = [];
  /**
   * The keys of the last map walked, in its order, and their indexes: records of one answer list their keys in
   * the same order, so `at` is mostly a pointer comparison instead of a hash lookup.
   */
  private readonly order: string[] = [];
  private readonly orderIndex: number[] = [];

  /** The index of the j-th key of a map being walked. */
  at(j: number, key: string): number {
    if (this.order[j] === key) return this.orderIndex[j]!;
    const i = this.of(key);
    if (j <= this.order.length) {
      this.order[j] = key;
      this.orderIndex[j] = i;
    }
    return i;
  }

  of(key: string): number {
    let i = this.map.get(key);
    if (i === undefined) {
      i = this.keys.length;
      this.keys.push(key);
      this.map.set(key, i);
    }
    return i;
  }
}
