/**
 * A fixed-interval poll loop for the DVR and recordings APIs. Each round is awaited before the next is scheduled,
 * rounds start on multiples of the interval from the first one (no drift), and a round that throws is logged and
 * counted by the caller's `round`; the loop itself only ends on stop. An interval over Node's timer limit
 * (2^31-1 ms) is waited out in steps by the clock (src/clock.ts), never fired at once.
 */
import type { Clock } from '../clock.js';
import type { Logger } from '../log.js';

export async function pollEvery(
  intervalMs: number,
  clock: Clock,
  signal: AbortSignal,
  round: () => Promise<void>,
  log: Logger,
): Promise<void> {
  // 0, a negative or a non-number interval would poll in a busy loop: a bug of the caller, refused loudly.
  if (!(intervalMs >= 1) || !Number.isFinite(intervalMs))
    throw new RangeError(`poll interval must be a finite number of ms >= 1, got ${intervalMs}`);
  let next = clock.now();
  while (!signal.aborted) {
    try {
      await round();
    } catch (err) {
      // A round reports its own failures; reaching here is a bug, which must not stop the exporter.
      log.error({ err }, 'poll round failed unexpectedly');
    }
    next += intervalMs;
    const now = clock.now();
    if (next <= now) next = now + intervalMs - ((now - next) % intervalMs);
    try {
      await clock.sleep(next - now, signal);
    } catch {
      return;
    }
  }
}
