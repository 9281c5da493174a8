/**
 * The backfill's file helpers (src/backfill/files.ts): readJson tells a missing file (undefined: nothing to resume)
 * from one that cannot be used, which is an error naming what the file is and its path; writeAtomic is the
 * project's whole-file write (tested in test/atomic-file.test.ts), and what it writes reads back.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readJson, writeAtomic } from '../../src/backfill/files.js';
import { perTest } from '../helpers/per-test.js';

const started = perTest();
const dir = () => started.folder('cdn-backfill-files-');

describe('readJson', () => {
  it('gives the parsed JSON of a file, and undefined when there is no file', async () => {
    const d = dir();
    writeFileSync(join(d, 'progress.json'), '{"version":1,"done":["acme"]}');
    expect(await readJson(join(d, 'progress.json'), 'progress file')).toEqual({ version: 1, done: ['acme'] });
    expect(await readJson(join(d, 'absent.json'), 'progress file')).toBeUndefined();
  });

  it('refuses a file that is not JSON, naming what it is and its path', async () => {
    const d = dir();
    const path = join(d, 'progress.json');
    writeFileSync(path, '{"version":1,');
    await expect(readJson(path, 'progress file')).rejects.toThrow(`progress file ${path}: not valid JSON`);
  });

  it('refuses a path that cannot be read (a folder), naming what it is, its path and the cause', async () => {
    const d = dir();
    const path = join(d, 'progress.json');
    mkdirSync(path);
    await expect(readJson(path, 'progress file')).rejects.toThrow(
      new RegExp(`^progress file ${path}: .*EISDIR`),
    );
  });
});

describe('writeAtomic', () => {
  it('writes a whole file that readJson reads back', async () => {
    const path = join(dir(), 'progress.json');
    await writeAtomic(path, JSON.stringify({ version: 1 }));
    expect(await readJson(path, 'progress file')).toEqual({ version: 1 });
  });
});
