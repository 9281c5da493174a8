/**
 * What lives as long as one test. `startTestSimulator`: a simulator closed when the test that starts it finishes.
 * `perTest`: the stacks, simulator and folder a file's tests start, stopped after each test in that order (the
 * stacks, then the simulator they share, then the folder), passed or failed.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, onTestFinished } from 'vitest';
import { type Simulator, type SimulatorOptions, startSimulator } from '../../src/simulator/server.js';
import { type Stack, type StackOptions, startStack } from './stack.js';

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

export interface PerTest {
  /** Starts a simulator, closed after the test, once the stacks are stopped. */
  simulator(opts: SimulatorOptions): Promise<Simulator>;
  /** A new temporary folder whose name starts with `prefix`, removed after the test. */
  folder(prefix: string): string;
  /** Starts a stack (startStack), stopped after the test. */
  stack(o?: StackOptions): Promise<Stack>;
}

/** Call at the top of a test file: registers the afterEach that stops what each test started through it. */
export function perTest(): PerTest {
  let stacks: Stack[] = [];
  let sims: Simulator[] = [];
  let dirs: string[] = [];
  afterEach(async () => {
    const started = { stacks, sims, dirs };
    stacks = [];
    sims = [];
    dirs = [];
    for (const s of started.stacks) await s.stop();
    for (const s of started.sims) await s.close();
    for (const d of started.dirs) rmSync(d, { recursive: true, force: true });
  });
  return {
    simulator: async (opts) => {
      const sim = await startSimulator(opts);
      sims.push(sim);
      return sim;
    },
    folder: (prefix) => {
      const dir = mkdtempSync(join(tmpdir(), prefix));
      dirs.push(dir);
      return dir;
    },
    stack: async (o) => {
      const stack = await startStack(o);
      stacks.push(stack);
      return stack;
    },
  };
}
