/**
 * The accounts stopped at run time (accounts_discovery) and not back: what was kept for them (their counter values,
 * their windows awaiting a revisit, their ranking) stays, in memory and in the state file, for
 * `metrics.counter_retention`, so one that comes back resumes where it stopped; then it is forgotten.
 */

/** A part that keeps something per departed account. */
export interface KeptPerAccount {
  forget(account: string): void;
}

export class DepartedAccounts {
  /** Accounts stopped in this process and not back, with when they stopped (ms). */
  private readonly away = new Map<string, number>();

  constructor(private readonly parts: readonly KeptPerAccount[]) {}

  /** The account is polled again. */
  back(account: string): void {
    this.away.delete(account);
  }

  /** The account stopped at `atMs`; what the parts keep for it stays until forgetAway. */
  left(account: string, atMs: number): void {
    this.away.set(account, atMs);
  }

  /**
   * Forgets what was kept for the accounts that stopped before `beforeMs` and are not back: after
   * `metrics.counter_retention`, as for a resource gone that long. One that comes back later starts afresh; its
   * series were gone from /metrics that long, Prometheus sees new ones. Returns their names (their cursors go
   * too: CursorBook.forget).
   */
  forgetAway(beforeMs: number): string[] {
    const gone: string[] = [];
    for (const [account, at] of this.away) {
      if (at >= beforeMs) continue;
      this.away.delete(account);
      for (const part of this.parts) part.forget(account);
      gone.push(account);
    }
    return gone;
  }
}
