/**
 * The ranking file beside the state file (issue 35): a restart keeps the same top N; a part that cannot be true is
 * dropped and the rest kept; a file of another format or period is ignored (never a refused start: nothing counted
 * depends on it); the saver writes at most once per interval, and once more when flushed.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { MINUTE } from '../../src/clock.js';
import { ResourceRanking } from '../../src/traffic/ranking.js';
import { RankingSaver, RankingStateFile, rankingStatePath } from '../../src/traffic/ranking-state.js';
import type { TrafficRecord } from '../../src/traffic/response.js';
import { captureLog } from '../helpers/log-capture.js';

const T = Date.UTC(2026, 2, 1, 12, 0);
const DAY = 86_400_000;
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function dir(): string {
  const d = mkdtempSync(join(tmpdir(), 'cdn-ranking-'));
  dirs.push(d);
  return d;
}

function rec(id: string, requests: number): TrafficRecord {
  const side = { codes: new Map(), classes: new Map(), requestTimeSeconds: new Map(), requests };
  return { resource: id, edge: side, origin: side };
}

function ranked(): ResourceRanking {
  const r = new ResourceRanking(DAY);
  for (let i = 0; i < 12; i++)
    for (const account of ['acme', 'beta'])
      r.observe(
        account,
        T + i * 5 * MINUTE,
        T + (i + 1) * 5 * MINUTE,
        [rec('a', 10 + i), rec('b', 5 * i), rec('c', 1)],
        (x) => x.resource,
      );
  return r;
}

describe('the ranking file', () => {
  it('lies beside the state file', () => {
    expect(rankingStatePath('/var/lib/cdn/state.json')).toBe('/var/lib/cdn/state.ranking.json');
    expect(rankingStatePath('/var/lib/cdn/state')).toBe('/var/lib/cdn/state.ranking.json');
  });

  it('gives a restart the same top N', async () => {
    const file = new RankingStateFile(join(dir(), 'state.ranking.json'));
    const r = ranked();
    await file.save(r.saved());
    const { log } = captureLog();
    const back = new ResourceRanking(DAY);
    expect(back.restore((await file.load(DAY, T + DAY, log))!)).toBe(true);
    for (const n of [1, 2, 3]) expect([...back.top('acme', n)].sort()).toEqual([...r.top('acme', n)].sort());
    expect(readdirSync(join(file.path, '..'))).toEqual(['state.ranking.json']);
  });

  it('drops a part that cannot be true, keeps the rest, and never refuses a start', async () => {
    const file = new RankingStateFile(join(dir(), 'state.ranking.json'));
    const saved = ranked().saved();
    saved.accounts.beta!.traffic[3] = -1;
    writeFileSync(file.path, JSON.stringify(saved));
    const { log, lines } = captureLog();
    const loaded = await file.load(DAY, T + DAY, log);
    expect(Object.keys(loaded!.accounts)).toEqual(['acme']);
    const logged = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(logged.some((l) => l.account === 'beta' && String(l.problem).includes('finite number'))).toBe(
      true,
    );
    // In the future, a slice the clock has not reached: dropped too.
    expect(await file.load(DAY, T - DAY, log)).toEqual({ ...saved, accounts: {} });
    for (const text of ['not json', '[]', JSON.stringify({ ...saved, version: 2 })]) {
      writeFileSync(file.path, text);
      expect(await file.load(DAY, T + DAY, log)).toBeUndefined();
    }
    writeFileSync(file.path, JSON.stringify(saved));
    expect(await file.load(DAY / 2, T + DAY, log)).toBeUndefined();
    expect(JSON.parse(readFileSync(file.path, 'utf8')).periodMs).toBe(DAY);
  });

  it('is written at most once per interval while windows are counted, and once more when flushed', async () => {
    const file = new RankingStateFile(join(dir(), 'state.ranking.json'));
    let now = T;
    let takes = 0;
    const r = ranked();
    const { log } = captureLog();
    const saver = new RankingSaver(
      file,
      () => {
        takes++;
        return r.saved();
      },
      { everyMs: MINUTE, now: () => now, log },
    );
    saver.changed();
    await saver.flush();
    expect(takes).toBe(1);
    for (let i = 0; i < 5; i++) {
      now += 1000;
      saver.changed();
    }
    expect(takes).toBe(1);
    await saver.flush();
    expect(takes).toBe(2);
    now += MINUTE;
    saver.changed();
    await saver.flush();
    expect(takes).toBe(3);
    expect(JSON.parse(readFileSync(file.path, 'utf8')).version).toBe(1);
  });
});
