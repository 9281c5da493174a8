import { mkdirSync, mkdtempSync, renameSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  accountTokenSources,
  FileToken,
  InlineToken,
  loadConfig,
  TokenError,
  type TokenFs,
} from '../../src/config/index.js';

let dir: string;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'cdn-token-'));
});

afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

function errorOf(fn: () => unknown): Error {
  try {
    fn();
  } catch (e) {
    return e as Error;
  }
  throw new Error('no error');
}

describe('FileToken', () => {
  it('reads the file, trimming the trailing newline', () => {
    const path = join(dir, 'token');
    writeFileSync(path, 'tok-first\n');
    expect(new FileToken(path).get()).toBe('tok-first');
  });

  it('picks up a rotated file without being told', () => {
    const path = join(dir, 'token');
    writeFileSync(path, 'tok-first\n');
    const source = new FileToken(path);
    expect(source.get()).toBe('tok-first');
    writeFileSync(path, 'tok-second-rotated\n');
    expect(source.get()).toBe('tok-second-rotated');
  });

  it('picks up a Kubernetes-style rotation (a symlink swapped to a new directory)', () => {
    // A Secret volume: token -> ..data/token, ..data -> ..2026_01; rotation points ..data at a new directory.
    const v1 = join(dir, '..2026_01');
    const v2 = join(dir, '..2026_02');
    mkdirSync(v1);
    mkdirSync(v2);
    writeFileSync(join(v1, 'token'), 'tok-aaaa');
    writeFileSync(join(v2, 'token'), 'tok-bbbb');
    symlinkSync('..2026_01', join(dir, '..data'));
    symlinkSync(join('..data', 'token'), join(dir, 'token'));
    const source = new FileToken(join(dir, 'token'));
    expect(source.get()).toBe('tok-aaaa');
    symlinkSync('..2026_02', join(dir, '..data_tmp'));
    renameSync(join(dir, '..data_tmp'), join(dir, '..data'));
    expect(source.get()).toBe('tok-bbbb');
  });

  it('reads once while the file is unchanged; refresh() reads again', () => {
    const path = join(dir, 'token');
    writeFileSync(path, 'tok-1111');
    let content = 'tok-1111';
    let reads = 0;
    // The stat stays the same while the content changes: only refresh() can see it.
    const fs: TokenFs = {
      stat: (p) => statSync(p, { bigint: true }),
      read: () => {
        reads++;
        return content;
      },
    };
    const source = new FileToken(path, fs);
    for (let i = 0; i < 5; i++) expect(source.get()).toBe('tok-1111');
    expect(reads).toBe(1);
    content = 'tok-2222';
    expect(source.get()).toBe('tok-1111');
    expect(source.refresh()).toBe('tok-2222');
    expect(source.get()).toBe('tok-2222');
    expect(reads).toBe(2);
  });

  it('a missing file is an error naming the file', () => {
    const path = join(dir, 'absent');
    const error = errorOf(() => new FileToken(path).get());
    expect(error).toBeInstanceOf(TokenError);
    expect(error.message).toBe(`token file ${path}: does not exist`);
  });

  it('an empty file is an error naming the file, never its content', () => {
    const path = join(dir, 'token');
    writeFileSync(path, '  \n');
    expect(errorOf(() => new FileToken(path).get()).message).toBe(`token file ${path}: is empty`);
  });

  it('a file removed after a good read is an error, not the stale token', () => {
    const path = join(dir, 'token');
    writeFileSync(path, 'tok-secret-xyz');
    const source = new FileToken(path);
    expect(source.get()).toBe('tok-secret-xyz');
    rmSync(path);
    const error = errorOf(() => source.get());
    expect(error.message).toBe(`token file ${path}: does not exist`);
    expect(error.message).not.toContain('tok-secret-xyz');
    writeFileSync(path, 'tok-back');
    expect(source.get()).toBe('tok-back');
  });

  it('a directory is an error naming the path', () => {
    expect(errorOf(() => new FileToken(dir).get()).message).toBe(`token file ${dir}: is a directory`);
  });

  it('describes itself by path only', () => {
    const path = join(dir, 'token');
    writeFileSync(path, 'tok-secret-xyz');
    const source = new FileToken(path);
    source.get();
    expect(source.description).toBe(`file ${path}`);
    expect(JSON.stringify(source)).not.toContain('tok-secret-xyz');
  });
});

describe('InlineToken', () => {
  it('trims and keeps the token; refresh() returns the same', () => {
    const source = new InlineToken(' tok-inline\n');
    expect(source.get()).toBe('tok-inline');
    expect(source.refresh()).toBe('tok-inline');
    expect(source.description).toBe('inline');
    expect(JSON.stringify(source)).not.toContain('tok-inline');
  });
});

describe('accountTokenSources', () => {
  it("gives each account its own token or the api's, shared between accounts that use it", () => {
    const shared = join(dir, 'shared');
    const own = join(dir, 'own');
    writeFileSync(shared, 'tok-shared\n');
    writeFileSync(own, 'tok-own\n');
    const config = loadConfig({
      env: {},
      file: 'cdn.yaml',
      readFile: () =>
        `api: {base_url: "https://a.example", token_file: ${JSON.stringify(shared)}}\n` +
        `accounts: [{name: a}, {name: b}, {name: c, token_file: ${JSON.stringify(own)}}, {name: d, token: tok-d}]\n`,
    });
    const sources = accountTokenSources(config);
    expect([...sources.keys()]).toEqual(['a', 'b', 'c', 'd']);
    expect(sources.get('a')).toBe(sources.get('b'));
    expect(sources.get('a')!.get()).toBe('tok-shared');
    expect(sources.get('c')!.get()).toBe('tok-own');
    expect(sources.get('d')!.get()).toBe('tok-d');
  });
});
