/**
 * A backfill with `limits.top_resources` (docs/backfill.md, "Top resources"), run in-process through the command's
 * own entry: the resources kept apart are each account's top N in the ranking the exporter saved beside
 * `state_file`; every other resource is written as `resource="__other__"`. Checked against the simulator's truth
 * over the range: the kept resources exactly, `__other__` as the sum of the folded ones, and every counter family
 * summed by account (code and class kept) exactly. Without a saved ranking every resource is folded (logged), and
 * the sums by account are still exact.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ProgressFile } from '../../src/backfill/progress-file.js';
import { MINUTE } from '../../src/clock.js';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import { ResourceRanking } from '../../src/traffic/ranking.js';
import { RankingStateFile, rankingStatePath } from '../../src/traffic/ranking-state.js';
import type { TrafficRecord } from '../../src/traffic/response.js';
import { cliTestFolder } from '../helpers/cli-process.js';
import { truthOver } from '../helpers/ground-truth.js';
import { backfillInProcess, closedEnd, iso, type OmSample, readOm, simConfig } from './om.js';

const dir = cliTestFolder('cdn-backfill-top-');
const DAY = 24 * 60 * MINUTE;

const backfill = (args: string[]) => backfillInProcess(args, 'warn');

/** A saved ranking in which `top` of each account has the most traffic (an hour before `before`). */
async function saveRanking(stateFile: string, ranks: Record<string, string[]>, before: number) {
  const ranking = new ResourceRanking(DAY);
  for (const [account, ids] of Object.entries(ranks)) {
    const records = ids.map(
      (resource, i): TrafficRecord => ({
        resource,
        edge: {
          codes: new Map(),
          classes: new Map(),
          requestTimeSeconds: new Map(),
          bandwidthBitsPerSecond: 1e9 / (i + 1),
        },
        origin: { codes: new Map(), classes: new Map(), requestTimeSeconds: new Map() },
      }),
    );
    ranking.observe(account, before - 70 * MINUTE, before - 60 * MINUTE, records, (r) => r.resource);
  }
  await new RankingStateFile(rankingStatePath(stateFile)).save(ranking.saved());
}

/** Per counter and status key (`name{code|class}`), the account's running totals at `at`, by resource. */
function written(
  samples: readonly OmSample[],
  account: string,
  at: number,
): Map<string, Map<string, number>> {
  const out = new Map<string, Map<string, number>>();
  for (const s of samples) {
    if (s.labels.account !== account || s.timestampMs !== at || !s.name.endsWith('_total')) continue;
    const key = `${s.name}{${s.labels.code ?? s.labels.class ?? ''}}`;
    const by = out.get(key) ?? new Map<string, number>();
    by.set(s.labels.resource!, (by.get(s.labels.resource!) ?? 0) + s.value);
    out.set(key, by);
  }
  return out;
}

/** The truth of `ids` of `account` over [from, to), keyed as `written` keys it. */
function truth(sim: Simulator, account: string, ids: readonly string[], from: number, to: number) {
  const out = new Map<string, number>();
  const add = (key: string, n: number) => out.set(key, (out.get(key) ?? 0) + n);
  for (const id of ids) {
    const t = truthOver(sim, account, id, [[from, to]])!;
    for (const side of ['edge', 'origin'] as const) {
      for (const [code, n] of Object.entries(t[side].codes)) add(`cdn_${side}_responses_total{${code}}`, n);
      for (const [cls, n] of Object.entries(t[side].classes))
        add(`cdn_${side}_responses_by_class_total{${cls}}`, n);
      add(`cdn_${side}_requests_total{}`, t[side].requests);
      add(`cdn_${side}_transferred_bytes_total{}`, t[side].bytes);
    }
    add('cdn_edge_cache_hit_bytes_total{}', t.edge.hitBytes);
  }
  return out;
}

/** Every counter and status key: the sum over `resources` of what was written equals `expected` (absent: 0). */
function expectSums(
  got: Map<string, Map<string, number>>,
  expected: Map<string, number>,
  resources: (id: string) => boolean,
  what: string,
): number {
  let checked = 0;
  for (const key of new Set([...got.keys(), ...expected.keys()])) {
    let sum = 0;
    for (const [id, v] of got.get(key) ?? []) if (resources(id)) sum += v;
    expect(sum, `${what} ${key}`).toBe(expected.get(key) ?? 0);
    checked++;
  }
  return checked;
}

const idsOf = (sim: Simulator, account: string) =>
  sim.accounts.find((a) => a.name === account)!.resources.map((r) => r.id);

describe('backfill with limits.top_resources', () => {
  it('keeps the saved ranking top N apart, folds the rest into __other__, and the sums by account are exact', async () => {
    const sim = await startSimulator({ seed: 35 }, { host: '127.0.0.1', port: 0 });
    try {
      const to = closedEnd(6 * MINUTE);
      const from = to - 60 * MINUTE;
      const state = join(dir, 'state.json');
      const demo = idsOf(sim, 'demo');
      const acme = idsOf(sim, 'acme');
      // acme: its last resource first; demo: its second and fourth first.
      const ranks = { acme: [acme[2]!, acme[0]!, acme[1]!], demo: [demo[1]!, demo[3]!, demo[0]!] };
      await saveRanking(state, ranks, from);
      const config = simConfig(dir, sim.url, ['  requests_per_second: 50'], 'top.yml');
      const withLimits = `${readFileSync(config, 'utf8').replace(
        '  - name: demo\n    token: demo-token\n',
        '  - name: demo\n    token: demo-token\n    top_resources: 2\n',
      )}limits:\n  top_resources: 1\nstate_file: ${state}\n`;
      const file = join(dir, 'top-limits.yml');
      writeFileSync(file, withLimits);
      const out = join(dir, 'top.om');
      const r = await backfill(['--config', file, '--from', iso(from), '--to', iso(to), '--output', out]);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stderr).not.toContain('no saved ranking');
      const om = readOm(readFileSync(out, 'utf8'));
      expect(om.wellFormed).toBe(true);
      const kept = { acme: [acme[2]!], demo: [demo[1]!, demo[3]!] };
      for (const account of ['acme', 'demo'] as const) {
        const ids = idsOf(sim, account);
        const folded = ids.filter((id) => !kept[account].includes(id));
        expect(folded.length).toBeGreaterThan(0);
        const got = written(om.samples, account, to);
        // Series: the kept resources and __other__, nothing else (gauges included).
        const resources = new Set(
          om.samples.filter((s) => s.labels.account === account).map((s) => s.labels.resource),
        );
        expect([...resources].sort()).toEqual([...kept[account], '__other__'].sort());
        // No median for __other__.
        expect(
          om.samples.some(
            (s) => s.labels.resource === '__other__' && s.name.includes('request_duration_median'),
          ),
        ).toBe(false);
        let checked = 0;
        for (const id of kept[account])
          checked += expectSums(
            got,
            truth(sim, account, [id], from, to),
            (r) => r === id,
            `${account} ${id}`,
          );
        checked += expectSums(got, truth(sim, account, folded, from, to), (r) => r === '__other__', account);
        checked += expectSums(got, truth(sim, account, ids, from, to), () => true, `${account} by account`);
        expect(checked).toBeGreaterThan(30);
      }
    } finally {
      await sim.close();
    }
  }, 60_000);

  it('folds every resource of an account without a saved ranking, says so, and the sums are exact', async () => {
    const sim = await startSimulator({ seed: 36 }, { host: '127.0.0.1', port: 0 });
    try {
      const to = closedEnd(6 * MINUTE);
      const from = to - 30 * MINUTE;
      const config = simConfig(dir, sim.url, ['  requests_per_second: 50'], 'none.yml');
      const file = join(dir, 'none-limits.yml');
      writeFileSync(
        file,
        `${readFileSync(config, 'utf8')}limits:\n  top_resources: 3\nstate_file: ${join(dir, 'none', 'state.json')}\n`,
      );
      const out = join(dir, 'none.om');
      const r = await backfill([
        '--config',
        file,
        '--accounts',
        'acme',
        '--from',
        iso(from),
        '--to',
        iso(to),
        '--output',
        out,
      ]);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stderr).toContain('no saved ranking of this account');
      const om = readOm(readFileSync(out, 'utf8'));
      expect(new Set(om.samples.map((s) => s.labels.resource))).toEqual(new Set(['__other__']));
      const ids = idsOf(sim, 'acme');
      const got = written(om.samples, 'acme', to);
      expect(
        expectSums(got, truth(sim, 'acme', ids, from, to), () => true, 'acme by account'),
      ).toBeGreaterThan(10);
    } finally {
      await sim.close();
    }
  }, 60_000);

  it('keeps the kept resources in its progress, so a resume folds as the run began', async () => {
    const file = new ProgressFile(join(dir, 'kept.progress'));
    const kept = { acme: ['2003'], demo: ['1002', '1004'] };
    await file.save({ asked: 'mode=range', runs: [], requests: 3, kept });
    expect((await file.load())?.kept).toEqual(kept);
    writeFileSync(
      file.path,
      JSON.stringify({ version: 1, asked: 'x', runs: [], requests: 0, kept: { acme: [1] } }),
    );
    await expect(file.load()).rejects.toThrow('kept is not a list of resource ids per account');
  });
});
