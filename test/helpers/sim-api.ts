/**
 * One API of the simulator (its express router) served alone on loopback, for the tests of that API: a world of
 * two accounts, `acme` (with the streams or recordings a test gives it) and `other`, each with its own token.
 * `closeServed` (afterEach) closes every server `startApi` started.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express, { type Router } from 'express';
import type { SimAccount, SimContext } from '../../src/simulator/types.js';
import { FakeClock } from './fake-clock.js';

export const ACME_TOKEN = 'tok-acme-secret';
export const OTHER_TOKEN = 'tok-other-secret';

/** The simulator context of `acme` (given `acme`'s streams or recordings) and `other`, neither with resources. */
export function twoAccounts(
  clock: FakeClock,
  seed: number,
  acme: Pick<SimAccount, 'streams' | 'recordings'>,
): SimContext {
  const accounts = new Map<string, SimAccount>([
    ['acme', { name: 'acme', token: ACME_TOKEN, resources: [], ...acme }],
    ['other', { name: 'other', token: OTHER_TOKEN, resources: [], streams: [], recordings: [] }],
  ]);
  return {
    clock,
    seed,
    accounts,
    accountsForToken: (t) => {
      const names = [...accounts.values()].filter((a) => a.token === t).map((a) => a.name);
      return names.length > 0 ? names : undefined;
    },
  };
}

const served: Server[] = [];

/** Serves `router` under `prefix` on a loopback port; returns the base URL (`http://127.0.0.1:port/prefix`). */
async function serveApi(prefix: string, router: Router): Promise<string> {
  const app = express();
  app.use(prefix, router);
  const s = app.listen(0, '127.0.0.1');
  served.push(s);
  await new Promise<void>((resolve) => s.once('listening', () => resolve()));
  return `http://127.0.0.1:${(s.address() as AddressInfo).port}${prefix}`;
}

/**
 * One API's simulator on a fake clock at `t0`, made by `create` from the context `context` builds on that clock,
 * and served under `prefix` (serveApi): the clock, the simulator and the base URL.
 */
export async function startApi<S extends { router: Router }>(
  prefix: string,
  t0: number,
  context: (clock: FakeClock) => SimContext,
  create: (ctx: SimContext) => S,
): Promise<{ clock: FakeClock; sim: S; base: string }> {
  const clock = new FakeClock(t0);
  const sim = create(context(clock));
  return { clock, sim, base: await serveApi(prefix, sim.router) };
}

export async function closeServed(): Promise<void> {
  await Promise.all(served.splice(0).map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
}
