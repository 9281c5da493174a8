/**
 * The basic-auth password check off the event loop (src/web/bcrypt-worker.ts), run as the worker thread it is,
 * from the sources (Node strips the types): `{id, bytes}` with `bytes` the UTF-8 JSON of `[password, hash]` is
 * answered `{id, ok}`; htpasswd's `$2y$` hashes verify; anything broken is a refusal and the worker answers the
 * next message all the same; run outside a worker thread it refuses to start. (./auth.test.ts runs the built
 * worker through `workerCompare`.)
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { afterEach, describe, expect, it } from 'vitest';
import type { CheckReply } from '../../src/web/bcrypt-worker.js';
import { htpasswd } from './harness.js';

const SOURCE = new URL('../../src/web/bcrypt-worker.ts', import.meta.url);
const utf8 = new TextEncoder();

const workers: Worker[] = [];
afterEach(async () => {
  for (const w of workers.splice(0)) await w.terminate();
});

function start(): { ask(id: number, bytes: Uint8Array): void; replies(n: number): Promise<CheckReply[]> } {
  const worker = new Worker(SOURCE);
  workers.push(worker);
  const got: CheckReply[] = [];
  let wake: (() => void) | undefined;
  worker.on('message', (m: CheckReply) => {
    got.push(m);
    wake?.();
  });
  return {
    ask: (id, bytes) => worker.postMessage({ id, bytes }),
    replies: (n) =>
      new Promise<CheckReply[]>((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`${got.length} of ${n} replies within 20 s`)),
          20_000,
        );
        worker.once('error', reject);
        const check = () => {
          if (got.length >= n) {
            clearTimeout(timer);
            resolve(got.slice(0, n));
          }
        };
        wake = check;
        check();
      }),
  };
}

const pair = (password: string, hash: string) => utf8.encode(JSON.stringify([password, hash]));

describe('bcrypt-worker', () => {
  it('answers each check with its id: true for the password of an htpasswd $2y$ hash, false for another', async () => {
    const w = start();
    const hash = htpasswd('alice', 'correct horse');
    w.ask(7, pair('correct horse', hash));
    w.ask(8, pair('correct horse ', hash));
    w.ask(9, pair('bob', htpasswd('bob', 'hunter2')));
    const replies = await w.replies(3);
    expect(replies.sort((a, b) => a.id - b.id)).toEqual([
      { id: 7, ok: true },
      { id: 8, ok: false },
      { id: 9, ok: false },
    ]);
  });

  it('refuses what it cannot read, and goes on answering: no state is kept between messages', async () => {
    const w = start();
    w.ask(1, utf8.encode('not json'));
    w.ask(2, utf8.encode('{"password":"x"}'));
    w.ask(3, pair('x', 'not a bcrypt hash'));
    w.ask(4, new Uint8Array([0xff, 0xfe, 0x00]));
    w.ask(5, pair('hunter2', htpasswd('bob', 'hunter2')));
    const replies = await w.replies(5);
    expect(replies.sort((a, b) => a.id - b.id)).toEqual([
      { id: 1, ok: false },
      { id: 2, ok: false },
      { id: 3, ok: false },
      { id: 4, ok: false },
      { id: 5, ok: true },
    ]);
  });

  it('run as a plain script, refuses to start and says it is a worker thread', async () => {
    const result = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      const child = execFile(
        process.execPath,
        [fileURLToPath(SOURCE)],
        { timeout: 20_000 },
        (err, _out, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? null) : 0, stderr }),
      );
      child.stdin?.end();
    });
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain('web/bcrypt-worker.js runs as a worker thread (see src/web/auth.ts)');
  });
});
