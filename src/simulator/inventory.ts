/**
 * The simulator's inventory API (`GET /app/inventory/v1/accounts/`, docs/upstream-api.md "Inventory"): a JSON
 * array of the accounts the token's user may see, each `{status, utoken, uid, name}`. An unknown, expired or
 * revoked token is 401 (no documented body; we send `Unauthorized` as text). `status` is the account's own
 * (`active` unless a test changed it); `utoken` is a stable made-up value, as opaque as the real one.
 */
import { createHash } from 'node:crypto';
import express, { type Router } from 'express';
import type { SimContext } from './types.js';

/**
 * `failure()`: a status to answer instead (a test control: 503 for an inventory that is down), or undefined.
 * `body()`: bytes to answer instead of the list, to any token (a test control: a hostile listing), or undefined.
 */
export function createInventoryApi(
  ctx: SimContext,
  failure: () => number | undefined = () => undefined,
  body: () => string | Buffer | undefined = () => undefined,
): Router {
  const router = express.Router();
  router.get(['/accounts/', '/accounts'], (req, res) => {
    const fail = failure();
    if (fail !== undefined) {
      res.status(fail).type('text/plain').send('Service Unavailable');
      return;
    }
    const given = body();
    if (given !== undefined) {
      res.status(200).type('application/json').send(given);
      return;
    }
    const token = req.get('cdn-auth-token');
    const names = token ? ctx.accountsForToken(token) : undefined;
    if (!names) {
      res.status(401).type('text/plain').send('Unauthorized');
      return;
    }
    const out = names.flatMap((name) => {
      const acc = ctx.accounts.get(name);
      if (!acc) return [];
      const utoken = createHash('sha256').update(`utoken:${name}`).digest('hex').slice(0, 10);
      return [{ status: acc.status ?? 'active', utoken, uid: `1-1-${name}`, name }];
    });
    res.json(out);
  });
  return router;
}
