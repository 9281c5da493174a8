/**
 * Which replica polls which account (docs/operations.md, "Sharding"): rendezvous (highest random weight) hashing. Each account
 * goes to the shard whose weight `sha256("<shard>:<account>")` is highest. The choice depends only on the account
 * name and the number of shards, never on the other accounts, so every replica decides alone and they agree.
 * Going from N to N+1 shards moves about 1/(N+1) of the accounts, and only onto the new shard: an account moves
 * only when the new shard's weight beats the old winner's, and the weights of shards 0..N-1 do not change.
 *
 * The hash is part of the contract: replicas of different versions must agree, so it never changes.
 */
import { createHash } from 'node:crypto';

/** Throws unless `shards` is a whole number >= 1 and `shard` a whole number in [0, shards). */
export function assertShard(shard: number, shards: number): void {
  if (!Number.isInteger(shards) || shards < 1) {
    throw new RangeError(`sharding: shards must be a whole number >= 1, got ${shards}`);
  }
  if (!Number.isInteger(shard) || shard < 0 || shard >= shards) {
    throw new RangeError(`sharding: shard must be a whole number from 0 to ${shards - 1}, got ${shard}`);
  }
}

/** The weight of `account` on `shard`: the first 48 bits of sha256, exact in a double. */
function weight(shard: number, account: string): number {
  return createHash('sha256').update(`${shard}:${account}`).digest().readUIntBE(0, 6);
}

/** The shard (0..shards-1) that owns `account`. Equal weights, vanishingly rare, go to the lower shard. */
export function shardOf(account: string, shards: number): number {
  assertShard(0, shards);
  if (shards === 1) return 0;
  let best = 0;
  let bestWeight = weight(0, account);
  for (let shard = 1; shard < shards; shard++) {
    const w = weight(shard, account);
    if (w > bestWeight) {
      best = shard;
      bestWeight = w;
    }
  }
  return best;
}

/** The accounts (by `name`) that replica `shard` of `shards` polls, in their original order. */
export function accountsForShard<T extends { name: string }>(
  accounts: readonly T[],
  shard: number,
  shards: number,
): T[] {
  assertShard(shard, shards);
  return accounts.filter((a) => shardOf(a.name, shards) === shard);
}
