/**
 * The progress a backfill keeps for `--resume` (src/backfill/progress-file.ts; docs/backfill.md, "Interrupted"):
 * what it was asked as one line (so a resume with other flags is refused), and per run the next window, the
 * running totals there and the counts, the part sizes and the kept resources, saved as JSON a person can read (ISO
 * times) and loaded back the same. A file that is not such a progress is refused with its path and what to do; a
 * missing one is no progress; removing it twice is no error. The kept resources alone:
 * test/backfill/top-resources.test.ts.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { BackfillPlan } from '../../src/backfill/plan.js';
import { askedOf, type Progress, ProgressFile } from '../../src/backfill/progress-file.js';

const T0 = Date.parse('2026-10-01T00:00:00Z');
const MIN = 60_000;

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
function file(): ProgressFile {
  const dir = mkdtempSync(join(tmpdir(), 'cdn-progress-'));
  dirs.push(dir);
  return new ProgressFile(join(dir, 'out.om.progress'));
}

const PROGRESS: Progress = {
  asked: 'mode=range window=10m accounts=acme output=/x.om from=a to=b',
  runs: [
    {
      account: 'acme',
      start: T0,
      end: T0 + 60 * MIN,
      next: T0 + 20 * MIN,
      totals: [{ key: 'cdn_edge_requests_total\u0000acme\u00001', total: 1234.5, lastMs: T0 + 20 * MIN }],
      done: { windows: 2, skipped: 1, samples: 40 },
    },
    { account: 'globex', start: T0, end: T0 + 60 * MIN, next: T0 },
  ],
  parts: { 'cdn_edge_requests.counter.0': 4096 },
  requests: 7,
  kept: { acme: ['1', '2'] },
};

describe('ProgressFile', () => {
  it('loads what it saved, the same, from JSON with ISO times', async () => {
    const f = file();
    await f.save(PROGRESS);
    expect(await f.load()).toEqual(PROGRESS);
    const raw = JSON.parse(readFileSync(f.path, 'utf8'));
    expect(raw.version).toBe(1);
    expect(raw.runs[0]).toMatchObject({
      start: '2026-10-01T00:00:00.000Z',
      end: '2026-10-01T01:00:00.000Z',
      next: '2026-10-01T00:20:00.000Z',
    });
    // Saved again: replaced whole, nothing left beside it.
    await f.save({ asked: 'x', runs: [], requests: 0 });
    expect(await f.load()).toEqual({ asked: 'x', runs: [], requests: 0 });
    expect(readdirSync(join(f.path, '..'))).toEqual(['out.om.progress']);
  });

  it('is no progress when there is no file, and removing it twice is no error', async () => {
    const f = file();
    expect(await f.load()).toBeUndefined();
    await f.save(PROGRESS);
    await f.remove();
    await f.remove();
    expect(await f.load()).toBeUndefined();
  });

  it('refuses a file that is not a progress, naming it and saying how to start anew', async () => {
    const f = file();
    const refused = async (content: unknown) => {
      writeFileSync(f.path, typeof content === 'string' ? content : JSON.stringify(content));
      return (await f.load().catch((e: Error) => e)) as Error;
    };
    expect((await refused('{"version": 1,')).message).toBe(`backfill progress ${f.path}: not valid JSON`);
    await f.save(PROGRESS);
    const good = JSON.parse(readFileSync(f.path, 'utf8'));
    const cases: [unknown, string][] = [
      [{ ...good, version: 2 }, 'unknown format'],
      [{ ...good, requests: '7' }, 'unknown format'],
      [null, 'unknown format'],
      [
        { ...good, runs: [{ ...good.runs[0], next: '2026-10-01T02:00:00Z' }] },
        'a run is not {account, start, end, next}',
      ],
      [
        { ...good, runs: [{ ...good.runs[0], next: '2026-09-30T23:59:00Z' }] },
        'a run is not {account, start, end, next}',
      ],
      [
        { ...good, runs: [{ ...good.runs[0], start: 'yesterday' }] },
        'a run is not {account, start, end, next}',
      ],
      [{ ...good, runs: [{ ...good.runs[0], account: 3 }] }, 'a run is not {account, start, end, next}'],
      [
        { ...good, runs: [{ ...good.runs[0], done: { windows: -1, skipped: 0, samples: 0 } }] },
        'a run has bad counts',
      ],
      [
        { ...good, runs: [{ ...good.runs[0], done: { windows: 1.5, skipped: 0, samples: 0 } }] },
        'a run has bad counts',
      ],
      [{ ...good, runs: [{ ...good.runs[0], totals: {} }] }, 'totals is not a list'],
      [
        { ...good, runs: [{ ...good.runs[0], totals: [['k', -1, T0]] }] },
        'a total is not [key, total, last]',
      ],
      [{ ...good, runs: [{ ...good.runs[0], totals: [[1, 1, T0]] }] }, 'a total is not [key, total, last]'],
    ];
    for (const [content, why] of cases)
      expect((await refused(content)).message, why).toBe(
        `backfill progress ${f.path}: ${why}; remove it (and the output's parts) to start anew`,
      );
  });
});

describe('askedOf', () => {
  const plan: BackfillPlan = {
    mode: 'range',
    from: T0,
    to: T0 + 60 * MIN,
    windowMs: 10 * MIN,
    accounts: ['acme', 'globex'],
    output: { kind: 'file', path: '/data/x.om' },
    resume: false,
    latestEnd: T0 + 120 * MIN,
  };

  it('says what the backfill was asked in one line', () => {
    expect(askedOf(plan)).toBe(
      'mode=range window=10m accounts=acme,globex output=/data/x.om from=2026-10-01T00:00:00.000Z to=2026-10-01T01:00:00.000Z',
    );
    expect(askedOf({ ...plan, mode: 'gaps', output: { kind: 'remote' } } as BackfillPlan)).toBe(
      'mode=gaps window=10m accounts=acme,globex output=remote-write',
    );
  });

  it('differs for every flag that makes a backfill what it is, and not for --resume or the time now', () => {
    const others: Partial<BackfillPlan>[] = [
      { windowMs: 5 * MIN },
      { accounts: ['acme'] },
      { accounts: ['globex', 'acme'] },
      { output: { kind: 'file', path: '/data/y.om' } } as Partial<BackfillPlan>,
      { from: T0 + 10 * MIN },
      { to: T0 + 50 * MIN },
    ];
    for (const other of others)
      expect(askedOf({ ...plan, ...other }), JSON.stringify(other)).not.toBe(askedOf(plan));
    expect(askedOf({ ...plan, resume: true, latestEnd: T0 + 999 * MIN })).toBe(askedOf(plan));
  });
});
