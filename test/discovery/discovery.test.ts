/**
 * One discovery round's rules (src/discovery/discovery.ts), without HTTP: active and matching accounts only, the
 * first credential that lists an account is the one it is polled with, a failed listing keeps the last list. The
 * inventory answer's shapes: response.test.ts.
 */
import { describe, expect, it } from 'vitest';
import type { TokenSource } from '../../src/config/index.js';
import { type DiscoverySource, discoveryRound } from '../../src/discovery/discovery.js';
import type { InventoryResponse } from '../../src/discovery/response.js';
import { ApiError } from '../../src/http/errors.js';
import { silentLogger } from '../../src/log.js';

const token = (name: string): TokenSource => ({ description: name, get: () => name, refresh: () => name });

describe('discoveryRound', () => {
  it('keeps active accounts that match, prefers the first credential, and keeps the last list on failure', async () => {
    const apiToken = token('api');
    const other = token('other');
    let apiAnswer: () => Promise<InventoryResponse> = async () => ({
      accounts: [
        { name: 'prod-a', active: true },
        { name: 'prod-b', active: false },
        { name: 'prod-test', active: true },
        { name: 'dev-c', active: true },
      ],
      issues: 0,
    });
    const sources: DiscoverySource[] = [
      { label: 'mon', token: apiToken, list: () => apiAnswer() },
      {
        label: 'token:partner',
        token: other,
        list: async () => ({
          accounts: [
            { name: 'prod-a', active: true },
            { name: 'prod-z', active: true },
          ],
          issues: 1,
        }),
      },
    ];
    const applied: Array<Map<string, TokenSource>> = [];
    const refusedTokens: TokenSource[] = [];
    const counts: Record<string, number> = {};
    let issues = 0;
    const round = discoveryRound({
      log: silentLogger,
      sources,
      filter: { include: /^(?:prod-.*)$/, exclude: /^(?:prod-test)$/ },
      maxNameLength: 1024,
      refused: () => {},
      apply: (w) => applied.push(w),
      count: (label, n) => {
        counts[label] = n;
      },
      issues: (n) => {
        issues += n;
      },
      describe: (e) => String(e),
      tokenRefused: (t) => refusedTokens.push(t),
    });
    await round();
    expect([...applied[0]!]).toEqual([
      ['prod-a', apiToken],
      ['prod-z', other],
    ]);
    expect(counts).toEqual({ mon: 1, 'token:partner': 2 });
    expect(issues).toBe(1);
    apiAnswer = async () => {
      throw new Error('503');
    };
    await round();
    expect([...applied[1]!.keys()]).toEqual(['prod-a', 'prod-z']);
    expect(applied[1]!.get('prod-a')).toBe(apiToken);
    expect(refusedTokens, 'a failure that is not a refusal renews nothing').toEqual([]);
    // A revoked token: the refusal renews that credential's token (nothing else would while no account is polled).
    apiAnswer = async () => {
      throw new ApiError({ api: 'inventory', kind: 'auth', status: 401 });
    };
    await round();
    expect(refusedTokens).toEqual([apiToken]);
    expect([...applied[2]!.keys()]).toEqual(['prod-a', 'prod-z']);
  });
});
