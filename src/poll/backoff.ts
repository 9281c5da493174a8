/** Exponential backoff with full jitter (AWS architecture blog's "full jitter"): uniform in [0, min(cap, base*2^n)]. */
export interface BackoffPolicy {
  baseMs: number;
  capMs: number;
}

export function backoffDelay(
  attempt: number,
  policy: BackoffPolicy,
  random: () => number = Math.random,
): number {
  const ceiling = Math.min(policy.capMs, policy.baseMs * 2 ** Math.min(attempt, 30));
  // Never zero: a retry loop must always yield some time to the API.
  return Math.max(1, Math.floor(random() * ceiling));
}
