/** A simulator that lives as long as the test that starts it: closed when that test finishes, passed or failed. */
import { onTestFinished } from 'vitest';
import { type Simulator, type SimulatorOptions, startSimulator } from '../../src/simulator/server.js';

/**
 * Starts a simulator on a loopback port; call it inside a test (vitest's onTestFinished closes it). The test may
 * close it itself: its `close` runs once, later calls wait for that one.
 */
export async function startTestSimulator(opts: SimulatorOptions): Promise<Simulator> {
  const sim = await startSimulator(opts);
  const closeOnce = sim.close;
  let closed: Promise<void> | undefined;
  sim.close = () => {
    closed ??= closeOnce();
    return closed;
  };
  onTestFinished(() => sim.close());
  return sim;
}
