/**
 * A file written whole or not at all (src/atomic-file.ts), as the files beside `state_file` rely on it: the new
 * content replaces the old one whole, in missing folders too, from one text or from pieces made as they are
 * written; a write that fails leaves the old file as it was, and no temporary file behind.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { writeAtomic } from '../src/atomic-file.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
const folder = () => {
  const d = mkdtempSync(join(tmpdir(), 'atomic-file-'));
  dirs.push(d);
  return d;
};

describe('writeAtomic', () => {
  it('writes a file in folders it makes, and replaces an existing one whole, leaving no temporary file', async () => {
    const dir = folder();
    const path = join(dir, 'a', 'b', 'ranking.json');
    await writeAtomic(path, '{"v":1}\n');
    expect(readFileSync(path, 'utf8')).toBe('{"v":1}\n');
    await writeAtomic(path, 'x');
    expect(readFileSync(path, 'utf8')).toBe('x');
    expect(readdirSync(join(dir, 'a', 'b'))).toEqual(['ranking.json']);
  });

  it('writes pieces made as they are written, several times its write size, as their concatenation', async () => {
    const path = join(folder(), 'settled.json');
    const piece = 'p'.repeat(100_000);
    let made = 0;
    function* pieces() {
      for (let i = 0; i < 30; i++) {
        made++;
        yield `${i}:${piece}\n`;
      }
    }
    await writeAtomic(path, pieces());
    expect(made).toBe(30);
    const text = readFileSync(path, 'utf8');
    expect(text.length).toBe(Array.from({ length: 30 }, (_, i) => `${i}:${piece}\n`).join('').length);
    expect(text.split('\n').map((l) => l.split(':')[0])).toEqual([
      ...Array.from({ length: 30 }, (_, i) => `${i}`),
      '',
    ]);
  });

  it('leaves the old file as it was when making the pieces fails midway', async () => {
    const path = join(folder(), 'gaps.json');
    writeFileSync(path, 'old');
    function* failing() {
      yield 'x'.repeat(2 << 20);
      throw new Error('out of pieces');
    }
    await expect(writeAtomic(path, failing())).rejects.toThrow('out of pieces');
    expect(readFileSync(path, 'utf8')).toBe('old');
    // Nor its temporary file: the next process (another pid) would not write over it.
    expect(readdirSync(dirname(path))).toEqual(['gaps.json']);
  });

  it('rejects when the file cannot be replaced, and removes its temporary file', async () => {
    const dir = folder();
    // A folder where the file should be: the rename fails.
    const path = join(dir, 'progress.json');
    mkdirSync(join(path, 'inside'), { recursive: true });
    await expect(writeAtomic(path, 'new')).rejects.toThrow();
    expect(readdirSync(dir)).toEqual(['progress.json']);
    expect(readdirSync(path)).toEqual(['inside']);
  });
});
