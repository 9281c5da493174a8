/**
 * Which resources a backfill keeps apart (src/backfill/kept-resources.ts; docs/backfill.md, "Top resources"): per
 * account with a `top_resources` limit, its top N in the ranking the running exporter saved beside `state_file`,
 * sorted; none (all folded, with a warning naming the account) when there is no usable ranking of it; nothing at all
 * with breakdown `account` or no limit. foldByKept folds a listed account's other resources, and nothing of an
 * account not listed.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { foldByKept, keptResources } from '../../src/backfill/kept-resources.js';
import { loadConfig } from '../../src/config/index.js';
import { ResourceRanking } from '../../src/traffic/ranking.js';
import { RankingStateFile, rankingStatePath } from '../../src/traffic/ranking-state.js';
import type { TrafficRecord } from '../../src/traffic/response.js';
import { captureLog } from '../helpers/log-capture.js';
import { perTest } from '../helpers/per-test.js';

const DAY = 86_400_000;
const T = Date.UTC(2026, 2, 1, 12, 0);
const W = 5 * 60_000;
const API = { base_url: 'https://api.cdn.example', token: 't' };

const started = perTest();
const stateFile = () => join(started.folder('cdn-kept-'), 'state.json');

const load = (doc: unknown) => loadConfig({ file: 'cdn.yaml', env: {}, readFile: () => stringify(doc) });

function rec(id: string, requests: number): TrafficRecord {
  const side = { codes: new Map(), classes: new Map(), requestTimeSeconds: new Map(), requests };
  return { resource: id, edge: side, origin: side };
}

/** Saves, beside `state`, a ranking of acme's resources (c busiest, then a, b, e, d) and beta's (x, y, z). */
async function saveRanking(state: string, periodMs = DAY): Promise<void> {
  const r = new ResourceRanking(periodMs);
  const feed = (account: string, ids: string[]) =>
    r.observe(
      account,
      T,
      T + W,
      ids.map((id, i) => rec(id, 1000 - i)),
      (x) => x.resource,
    );
  feed('acme', ['c', 'a', 'b', 'e', 'd']);
  feed('beta', ['x', 'y', 'z']);
  await new RankingStateFile(rankingStatePath(state)).save(r.saved());
}

describe('keptResources', () => {
  it("keeps each limited account's top N of the saved ranking apart, sorted; an account's own limit first", async () => {
    const state = stateFile();
    await saveRanking(state);
    const config = load({
      api: API,
      state_file: state,
      accounts: [{ name: 'acme' }, { name: 'beta', top_resources: 1 }],
      limits: { top_resources: 3 },
    });
    const { log, lines } = captureLog();
    expect(await keptResources(config, ['acme', 'beta'], T + W, log)).toEqual({
      acme: ['a', 'b', 'c'],
      beta: ['x'],
    });
    expect(lines).toEqual([]);
  });

  it('keeps nothing apart for a limited account without a usable ranking, and says so naming it', async () => {
    const state = stateFile();
    await saveRanking(state);
    const config = load({
      api: API,
      state_file: state,
      accounts: [{ name: 'acme' }, { name: 'newcomer' }],
      limits: { top_resources: 2 },
    });
    const { log, lines } = captureLog();
    expect(await keptResources(config, ['acme', 'newcomer'], T + W, log)).toEqual({
      acme: ['a', 'c'],
      newcomer: [],
    });
    const warned = lines.map((l) => JSON.parse(l)).filter((l) => l.level === 40);
    expect(warned).toEqual([
      expect.objectContaining({
        account: 'newcomer',
        top_resources: 2,
        ranking_file: rankingStatePath(state),
      }),
    ]);
    expect(warned[0].msg).toMatch(/__other__/);

    // No state_file: no ranking at all.
    const none = load({ api: API, accounts: [{ name: 'acme' }], limits: { top_resources: 2 } });
    const quiet = captureLog();
    expect(await keptResources(none, ['acme'], T + W, quiet.log)).toEqual({ acme: [] });
    expect(quiet.lines.map((l) => JSON.parse(l)).filter((l) => l.level === 40)).toHaveLength(1);
  });

  it('does not take a ranking saved for another top_resources_period', async () => {
    const state = stateFile();
    await saveRanking(state, 6 * 3_600_000);
    const config = load({
      api: API,
      state_file: state,
      accounts: [{ name: 'acme' }],
      limits: { top_resources: 2 },
    });
    expect(await keptResources(config, ['acme'], T + W, captureLog().log)).toEqual({ acme: [] });
  });

  it('lists no account with breakdown account, and none without a limit', async () => {
    const state = stateFile();
    await saveRanking(state);
    const byAccount = load({
      api: API,
      state_file: state,
      metrics: { breakdown: 'account' },
      accounts: [{ name: 'acme' }],
    });
    expect(await keptResources(byAccount, ['acme'], T + W, captureLog().log)).toEqual({});
    // The loader refuses top_resources with breakdown account; were it given, nothing would fold still.
    const limited = load({
      api: API,
      state_file: state,
      accounts: [{ name: 'acme' }],
      limits: { top_resources: 2 },
    });
    const asAccount = { ...limited, metrics: { ...limited.metrics, breakdown: 'account' as const } };
    expect(await keptResources(asAccount, ['acme'], T + W, captureLog().log)).toEqual({});
    const noLimit = load({
      api: API,
      state_file: state,
      accounts: [{ name: 'acme' }, { name: 'beta', top_resources: 0 }],
    });
    expect(await keptResources(noLimit, ['acme', 'beta'], T + W, captureLog().log)).toEqual({});
  });
});

describe('foldByKept', () => {
  it("folds a listed account's resources not kept apart, and nothing of an account not listed", () => {
    const fold = foldByKept({ acme: ['a', 'b'], newcomer: [] });
    expect(fold('acme', 'a')).toBe(false);
    expect(fold('acme', 'b')).toBe(false);
    expect(fold('acme', 'c')).toBe(true);
    expect(fold('newcomer', 'anything')).toBe(true);
    expect(fold('unlimited', 'anything')).toBe(false);
  });
});
