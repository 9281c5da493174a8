/**
 * The state file on a real file system: what a restart reads back, and that a reader (a restart after a crash)
 * never finds a torn or empty file while writes go on.
 */
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { StateFile } from '../../src/exporter/cursor-book.js';

const T = Date.UTC(2026, 5, 1, 12, 0);
const MINUTE = 60_000;

let dir: string | undefined;
afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

function fresh(): string {
  dir = mkdtempSync(join(tmpdir(), 'cdn-state-'));
  return join(dir, 'nested', 'state.json');
}

describe('state file', () => {
  it('loads back what was saved, creating its folder; a missing file is an empty state', async () => {
    const path = fresh();
    expect(await new StateFile(path).load()).toEqual(new Map());
    const cursors = new Map([
      ['acme', T],
      ['beta', T + 7 * MINUTE],
    ]);
    await new StateFile(path).save(cursors);
    expect(await new StateFile(path).load()).toEqual(cursors);
  });

  it('keeps the newest of many overlapping saves, and leaves no temporary file behind', async () => {
    const path = fresh();
    const file = new StateFile(path);
    const saves: Promise<void>[] = [];
    for (let i = 0; i < 50; i++) saves.push(file.save(new Map([['acme', T + i * MINUTE]])));
    await Promise.all(saves);
    expect(await new StateFile(path).load()).toEqual(new Map([['acme', T + 49 * MINUTE]]));
    expect(readdirSync(join(dir!, 'nested'))).toEqual(['state.json']);
  });

  it('never shows a reader a torn or empty file while it is rewritten', async () => {
    const path = fresh();
    const file = new StateFile(path);
    // Many accounts, so that one write is not a single small block.
    const many = (i: number) =>
      new Map(Array.from({ length: 2000 }, (_, a) => [`account-${a}`, T + i * MINUTE]));
    await file.save(many(0));
    // A reader on the thread pool, reading as fast as it can while the writes go on.
    let writing = true;
    let reads = 0;
    const torn: string[] = [];
    const reader = (async () => {
      for (let i = 0; i < 100_000 && writing; i++) {
        const text = await readFile(path, 'utf8');
        reads++;
        try {
          const parsed = JSON.parse(text) as { cursors: Record<string, string> };
          if (Object.keys(parsed.cursors).length !== 2000) torn.push(`${text.length} bytes, incomplete`);
        } catch {
          torn.push(`${text.length} bytes, not JSON`);
        }
      }
    })();
    for (let i = 1; i <= 100; i++) await file.save(many(i));
    writing = false;
    await reader;
    expect(reads).toBeGreaterThan(20);
    expect(torn).toEqual([]);
  });

  it('refuses an unreadable file with its path named, instead of starting over silently', async () => {
    const path = fresh();
    await new StateFile(path).save(new Map([['acme', T]]));
    writeFileSync(path, '{"version":1,"cursors":');
    await expect(new StateFile(path).load()).rejects.toThrow(`state_file ${path}: not valid JSON`);
  });

  it('keeps the revisit part beside the cursors, compactly, and refuses one of an unknown format by name', async () => {
    const path = fresh();
    const file = new StateFile(path);
    const counted = Buffer.from(new Float64Array([5, 0, 7]).buffer).toString('base64');
    const revisit = {
      version: 1 as const,
      families: ['cdn_edge_requests_total'],
      accounts: {
        acme: {
          series: [[0, '1001'] as [number, ...string[]], null, [0, '1002'] as [number, ...string[]]],
          windows: [
            { start: new Date(T).toISOString(), end: new Date(T + 5 * MINUTE).toISOString(), counted },
          ],
        },
      },
    };
    await file.save(new Map([['acme', T + 5 * MINUTE]]), revisit);
    const text = await readFile(path, 'utf8');
    // The cursors stay readable; the revisit part is one line.
    expect(text).toContain('"acme": "2026-06-01T12:05:00.000Z"');
    expect(text.split('\n').filter((l) => l.includes('"revisit"'))).toHaveLength(1);
    const loaded = await new StateFile(path).loadState();
    expect(loaded.cursors.get('acme')).toBe(T + 5 * MINUTE);
    expect(loaded.revisits).toEqual(revisit);

    writeFileSync(path, JSON.stringify({ version: 1, cursors: {}, revisit: { version: 2, accounts: {} } }));
    await expect(new StateFile(path).loadState()).rejects.toThrow(
      `state_file ${path}: its revisit part is of an unknown format`,
    );
  });
});
