/**
 * The keyed figures of a parsed traffic record (status codes, status classes, request time per size range) as
 * small read-only maps. A poll of 10k resources builds 60k of them, and a `Map` costs about 2.5 times as much to
 * build as two arrays (measured with Node 24: 64 ms against 25 ms per 10k records), so the parser builds these:
 * keys in the order the element gave them, values beside them. Elements of one answer list the same keys in the
 * same order, so consecutive records share one keys array. A lookup scans; a side has a few dozen keys at most.
 */

/** A read-only map whose keys are distinct and kept in insertion order, like a Map's. */
export class KeyedNumbers implements ReadonlyMap<string, number> {
  constructor(
    /** Distinct keys. Shared between records: never mutated. */
    readonly keyList: readonly string[],
    /**
     * The values: keyList.length of them from `offset` on. An array of their own for a parsed record; for one
     * from the parse worker (src/offloop/traffic.ts), the answer's one Float64Array of values, shared by every
     * record: a view per field (subarray) cost 115 bytes each, 9 MB of an unpacked 15k-resource answer's 18.
     */
    readonly valueList: ArrayLike<number>,
    readonly offset = 0,
  ) {}

  get size(): number {
    return this.keyList.length;
  }

  get(key: string): number | undefined {
    const i = this.keyList.indexOf(key);
    return i < 0 ? undefined : this.valueList[this.offset + i];
  }

  has(key: string): boolean {
    return this.keyList.includes(key);
  }

  forEach(
    callback: (value: number, key: string, map: ReadonlyMap<string, number>) => void,
    thisArg?: unknown,
  ): void {
    const keys = this.keyList;
    const values = this.valueList;
    const offset = this.offset;
    for (let i = 0; i < keys.length; i++) callback.call(thisArg, values[offset + i]!, keys[i]!, this);
  }

  // Iteration is for tests and diagnostics, not the hot path: it goes through a Map.
  entries(): MapIterator<[string, number]> {
    return this.toMap().entries();
  }

  keys(): MapIterator<string> {
    return this.toMap().keys();
  }

  values(): MapIterator<number> {
    return this.toMap().values();
  }

  [Symbol.iterator](): MapIterator<[string, number]> {
    return this.entries();
  }

  private toMap(): Map<string, number> {
    const m = new Map<string, number>();
    this.forEach((v, k) => {
      m.set(k, v);
    });
    return m;
  }
}

export const NO_KEYS = new KeyedNumbers([], []);

/**
 * Builds the KeyedNumbers of one field (say, edge status codes) record after record. While a record repeats the
 * previous record's keys, position by position, it shares that keys array; at the first difference it takes a
 * copy of its own. A key given twice in one record keeps its last value, as Map.set would.
 */
export class KeyedBuilder {
  /** Keys of the last record built; distinct. */
  private previous: string[] = [];
  private keys: string[] = this.previous;
  private shared = true;
  private values: number[] = [];

  start(): void {
    this.keys = this.previous;
    this.shared = true;
    this.values = [];
  }

  add(key: string, value: number): void {
    const i = this.values.length;
    if (this.shared) {
      // keys[0..i) are this record's keys so far and distinct, so a match here is not a repeat.
      if (this.keys[i] === key) {
        this.values.push(value);
        return;
      }
      this.keys = this.keys.slice(0, i);
      this.shared = false;
    }
    const at = this.keys.indexOf(key);
    if (at >= 0) {
      this.values[at] = value;
      return;
    }
    this.keys.push(key);
    this.values.push(value);
  }

  finish(): KeyedNumbers {
    const n = this.values.length;
    if (n === 0) return NO_KEYS;
    let keys = this.keys;
    if (this.shared && keys.length !== n) keys = keys.slice(0, n);
    this.previous = keys;
    return new KeyedNumbers(keys, this.values);
  }
}
