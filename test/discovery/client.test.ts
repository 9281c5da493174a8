/**
 * The inventory client (src/discovery/client.ts) against the simulator's inventory API served alone on loopback
 * (test/helpers/sim-api.ts): one GET of INVENTORY_PATH lists the accounts the token's user may see, each with
 * whether it is active; the body goes through the parser the client was given (the parse worker's for big
 * listings, src/discovery/codec.ts); a body that is not a list is ApiError `malformed` with status and endpoint, a
 * refused token is `auth`, an inventory that is down is a retryable `server` error, the token in none of them.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { INVENTORY_PATH, type InventoryBodyParser, InventoryClient } from '../../src/discovery/client.js';
import { parseInventoryBody } from '../../src/discovery/response.js';
import { createInventoryApi } from '../../src/simulator/inventory.js';
import { apiFailure, expectNoSecret } from '../helpers/api-errors.js';
import { closeUpstreams, recordedUpstream } from '../helpers/recorded-upstream.js';
import { ACME_TOKEN, closeServed, OTHER_TOKEN, startApi, twoAccounts } from '../helpers/sim-api.js';

const T0 = Date.UTC(2026, 0, 1, 12, 0, 0);

afterEach(async () => {
  await closeUpstreams();
  await closeServed();
});

/** The inventory of acme and other (other blocked); `control` answers instead (a status, or a body). */
async function start(token: string, control: { status?: number; body?: string } = {}) {
  const { clock, base } = await startApi(
    '/app/inventory/v1',
    T0,
    (c) => {
      const ctx = twoAccounts(c, 3, { streams: [], recordings: [] });
      ctx.accounts.get('other')!.status = 'blocked';
      // One user sees both accounts.
      ctx.accountsForToken = (t) => (t === ACME_TOKEN ? ['acme', 'other'] : undefined);
      return ctx;
    },
    (ctx) => ({
      router: createInventoryApi(
        ctx,
        () => control.status,
        () => control.body,
      ),
    }),
  );
  const { upstream, sent } = recordedUpstream(base, clock, token);
  return { upstream, sent };
}

describe('InventoryClient.listAccounts', () => {
  it("one GET of the inventory path: the token's accounts, each active or not", async () => {
    const { upstream, sent } = await start(ACME_TOKEN);
    const r = await new InventoryClient(upstream).listAccounts();
    expect(sent.map((s) => [s.api, s.method, s.path])).toEqual([['inventory', 'GET', INVENTORY_PATH]]);
    expect(r).toEqual({
      accounts: [
        { name: 'acme', active: true },
        { name: 'other', active: false },
      ],
      issues: 0,
    });
  });

  it('reads the body with the parser it was given', async () => {
    const { upstream } = await start(ACME_TOKEN);
    let calls = 0;
    const parse: InventoryBodyParser = async (bytes) => {
      calls++;
      return parseInventoryBody(bytes);
    };
    const given = await new InventoryClient(upstream, parse).listAccounts();
    expect(calls).toBe(1);
    expect(given).toStrictEqual(await new InventoryClient(upstream).listAccounts());
  });

  it('a body that is not a list is malformed, with status and endpoint', async () => {
    const { upstream } = await start(ACME_TOKEN, { body: '{"description":"maintenance"}' });
    const err = await apiFailure(new InventoryClient(upstream).listAccounts());
    expect(err).toMatchObject({
      api: 'inventory',
      kind: 'malformed',
      status: 200,
      endpoint: `GET ${INVENTORY_PATH}`,
      detail: 'the account list is not a JSON array',
    });
  });

  it('a refused token is auth, an inventory that is down a retryable server error; the token in neither', async () => {
    const refused = await apiFailure(new InventoryClient((await start(OTHER_TOKEN)).upstream).listAccounts());
    expect(refused).toMatchObject({ api: 'inventory', kind: 'auth', status: 401, retryable: false });
    expectNoSecret(refused, [OTHER_TOKEN]);
    const down = await apiFailure(
      new InventoryClient((await start(ACME_TOKEN, { status: 503 })).upstream).listAccounts(),
    );
    expect(down).toMatchObject({ api: 'inventory', kind: 'server', status: 503, retryable: true });
    expectNoSecret(down, [ACME_TOKEN]);
  });
});
