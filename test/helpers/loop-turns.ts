/**
 * Turns of the event loop (setImmediate callbacks) while some work runs: a test of work done in slices checks that
 * the loop turned meanwhile (a scrape or /healthz would have been answered), without timing anything. `onTurn`
 * runs at each turn: a change made while the work is under way.
 */
export async function turnsDuring<R>(
  work: () => Promise<R>,
  onTurn: () => void = () => {},
): Promise<{ result: R; turns: number }> {
  let turns = 0;
  let running = true;
  const tick = () => {
    if (!running) return;
    turns++;
    onTurn();
    setImmediate(tick);
  };
  setImmediate(tick);
  try {
    return { result: await work(), turns };
  } finally {
    running = false;
  }
}
