/** What a callback was given, in order, for a test to wait on: `nth` resolves once the nth has come. */
export class Arrivals<T> {
  readonly all: T[] = [];
  private waiters: Array<() => void> = [];

  push(v: T): void {
    this.all.push(v);
    for (const w of this.waiters.splice(0)) w();
  }

  async nth(n: number): Promise<T> {
    while (this.all.length < n) await new Promise<void>((r) => this.waiters.push(r));
    return this.all[n - 1]!;
  }
}
