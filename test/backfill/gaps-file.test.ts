/**
 * The gaps beside state_file (src/backfill/gaps.ts): what the exporter's recorder writes (merged, kept 90 days,
 * a bad file moved aside), and what `backfill --gaps` makes of it with the filled marks (the listed spans less the
 * filled ones, only those final, marks pruned with the spans they filled).
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  filledPath,
  GAPS_KEPT_MS,
  GapsRecorder,
  gapsPath,
  markFilled,
  pendingGaps,
} from '../../src/backfill/gaps.js';
import { MINUTE } from '../../src/clock.js';
import { createLogger, silentLogger } from '../../src/log.js';
import { FakeClock } from '../helpers/fake-clock.js';

const T0 = Date.parse('2026-11-01T00:00:00Z');
const m = (n: number) => T0 + n * MINUTE;
const dirs: string[] = [];

function stateFile(): string {
  const dir = mkdtempSync(join(tmpdir(), 'cdn-gaps-'));
  dirs.push(dir);
  return join(dir, 'state.json');
}

afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function listed(state: string) {
  return (JSON.parse(readFileSync(gapsPath(state), 'utf8')) as { spans: unknown[] }).spans;
}

describe('the gaps recorder', () => {
  it('names its files beside state_file', () => {
    expect(gapsPath('/var/lib/cdn/state.json')).toBe('/var/lib/cdn/state.gaps.json');
    expect(filledPath('/var/lib/cdn/state.json')).toBe('/var/lib/cdn/state.gaps.filled.json');
    expect(gapsPath('/data/state')).toBe('/data/state.gaps.json');
  });

  it('merges touching spans of one account and reason, keeps the others apart, and reads them back', async () => {
    const state = stateFile();
    const clock = new FakeClock(m(600));
    const r = await GapsRecorder.open(gapsPath(state), { clock, log: silentLogger });
    r.record('a', m(0), m(10), 'rejected');
    r.record('a', m(10), m(20), 'rejected');
    r.record('a', m(20), m(30), 'revisit');
    r.record('b', m(5), m(15), 'rejected');
    r.record('a', m(40), m(40), 'rejected');
    await r.flush();
    expect(listed(state)).toEqual([
      {
        account: 'a',
        start: '2026-11-01T00:00:00.000Z',
        end: '2026-11-01T00:20:00.000Z',
        reason: 'rejected',
      },
      { account: 'a', start: '2026-11-01T00:20:00.000Z', end: '2026-11-01T00:30:00.000Z', reason: 'revisit' },
      {
        account: 'b',
        start: '2026-11-01T00:05:00.000Z',
        end: '2026-11-01T00:15:00.000Z',
        reason: 'rejected',
      },
    ]);
    const again = await GapsRecorder.open(gapsPath(state), { clock, log: silentLogger });
    again.record('a', m(20), m(25), 'rejected');
    await again.flush();
    expect(again.list().filter((s) => s.account === 'a' && s.reason === 'rejected')).toEqual([
      { account: 'a', start: m(0), end: m(25), reason: 'rejected' },
    ]);
  });

  it('drops a span once it ended more than 90 days ago (the lookback ceiling), not a millisecond before', async () => {
    const state = stateFile();
    const clock = new FakeClock(m(10) + GAPS_KEPT_MS);
    const r = await GapsRecorder.open(gapsPath(state), { clock, log: silentLogger });
    r.record('a', m(0), m(10), 'catch_up_limit');
    await r.flush();
    expect(listed(state)).toHaveLength(1);
    await clock.advance(1);
    r.record('b', m(100), m(110), 'rejected');
    await r.flush();
    expect(listed(state)).toEqual([
      {
        account: 'b',
        start: '2026-11-01T01:40:00.000Z',
        end: '2026-11-01T01:50:00.000Z',
        reason: 'rejected',
      },
    ]);
  });

  it('moves a file it cannot read aside, with a warning, and lists anew', async () => {
    const state = stateFile();
    writeFileSync(gapsPath(state), '{"version": 1, "spans": [');
    const lines: string[] = [];
    const log = createLogger({
      level: 'warn',
      destination: { write: (l: string) => lines.push(l) } as never,
    });
    const r = await GapsRecorder.open(gapsPath(state), { clock: new FakeClock(m(600)), log });
    expect(lines.join('')).toMatch(/the gaps file cannot be read: moved aside/);
    expect(existsSync(`${gapsPath(state)}.bad`)).toBe(true);
    r.record('a', m(0), m(10), 'rejected');
    await r.flush();
    expect(listed(state)).toHaveLength(1);
  });
});

describe('the gaps backfill fills', () => {
  it('are the listed spans less the filled ones, final ones only, of the accounts asked, in their order', async () => {
    const state = stateFile();
    const r = await GapsRecorder.open(gapsPath(state), { clock: new FakeClock(m(600)), log: silentLogger });
    r.record('a', m(0), m(30), 'rejected');
    r.record('a', m(20), m(40), 'catch_up_limit');
    r.record('a', m(100), m(130), 'revisit');
    r.record('b', m(0), m(10), 'rejected');
    r.record('z', m(0), m(10), 'rejected');
    await r.flush();
    await markFilled(state, [{ account: 'a', start: m(10), end: m(15) }]);
    const p = await pendingGaps(state, ['b', 'a'], m(120));
    expect(p.runs).toEqual([
      { account: 'b', start: m(0), end: m(10) },
      { account: 'a', start: m(0), end: m(10) },
      { account: 'a', start: m(15), end: m(40) },
    ]);
    expect(p.notFinal).toEqual([{ account: 'a', start: m(100), end: m(130) }]);
    expect(p.reasons).toEqual({ rejected: 10 + 10 + 15, catch_up_limit: 20 });

    await markFilled(state, p.runs);
    expect((await pendingGaps(state, ['a', 'b'], m(120))).runs).toEqual([]);
    expect((await pendingGaps(state, ['a', 'b'], m(130))).runs).toEqual([
      { account: 'a', start: m(100), end: m(130) },
    ]);
  });

  it('prunes filled marks no listed span overlaps any more', async () => {
    const state = stateFile();
    writeFileSync(
      filledPath(state),
      JSON.stringify({
        version: 1,
        filled: [{ account: 'gone', start: '2026-01-01T00:00:00Z', end: '2026-01-01T00:10:00Z' }],
      }),
    );
    const r = await GapsRecorder.open(gapsPath(state), { clock: new FakeClock(m(600)), log: silentLogger });
    r.record('a', m(0), m(10), 'rejected');
    await r.flush();
    await markFilled(state, [{ account: 'a', start: m(0), end: m(10) }]);
    expect(JSON.parse(readFileSync(filledPath(state), 'utf8'))).toEqual({
      version: 1,
      filled: [{ account: 'a', start: '2026-11-01T00:00:00.000Z', end: '2026-11-01T00:10:00.000Z' }],
    });
  });

  it('refuses a file of another format, naming it', async () => {
    const state = stateFile();
    writeFileSync(gapsPath(state), '{"spans": []}');
    await expect(pendingGaps(state, ['a'], m(100))).rejects.toThrow(
      /gaps file .*state.gaps.json: unknown format/,
    );
  });
});
