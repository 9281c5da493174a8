/**
 * The parse worker's life (src/offloop/channel.ts), on a small echo worker written at test time (the channel names
 * no parser): it starts with the first body; a body's whole buffer moves to the worker (a view of a larger one is
 * copied first, so the caller's buffer stays whole); each reply settles the request of its id, in whatever order
 * they come; a worker that dies fails the requests it held and the next body starts a new one; one idle for
 * `idleMs` on the clock is stopped unless a request comes first; close() fails what is in flight and takes no
 * more; a missing worker file makes the channel unavailable, logged once. How ParsePool uses it (recycle after
 * the series shrank, inline parsing when unavailable): test/offloop/traffic.test.ts, dvr-recordings.test.ts.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { WorkerChannel } from '../../src/offloop/channel.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { captureLog } from '../helpers/log-capture.js';

interface Echo {
  id: number;
  text: string;
  length: number;
}

const dir = mkdtempSync(join(tmpdir(), 'cdn-channel-'));
const ECHO = pathToFileURL(join(dir, 'echo-worker.mjs'));
/** Echoes each body's text; HOLD is answered at RELEASE, the held ones last first; EXIT exits with code 3. */
writeFileSync(
  ECHO,
  `import { parentPort } from 'node:worker_threads';
const held = [];
parentPort.on('message', (m) => {
  const text = new TextDecoder().decode(m.bytes);
  if (text === 'EXIT') process.exit(3);
  if (text === 'HOLD') { held.push(m); return; }
  if (text === 'RELEASE') for (const h of held.splice(0).reverse()) parentPort.postMessage({ id: h.id, text: 'held ' + h.n, length: 4 });
  parentPort.postMessage({ id: m.id, text, length: m.bytes.byteLength });
});
`,
);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const channels: WorkerChannel<Echo>[] = [];
afterEach(async () => {
  for (const c of channels.splice(0)) await c.close();
});

const utf8 = new TextEncoder();

function channel(o: { idleMs?: number; url?: URL } = {}) {
  const clock = new FakeClock();
  const { log, lines } = captureLog();
  const c = new WorkerChannel<Echo>({
    name: 'test worker',
    url: o.url ?? ECHO,
    idleMs: o.idleMs ?? 60_000,
    clock,
    log,
    missingMessage: 'test worker not found',
  });
  channels.push(c);
  const send = (text: string, n = 0) => c.send(utf8.encode(text), (id, bytes) => ({ id, n, bytes }));
  return { c, clock, lines, send };
}

describe('WorkerChannel', () => {
  it('starts its worker with the first body and keeps it for the next', async () => {
    const { c, send } = channel();
    expect(c.available).toBe(true);
    expect(c.started).toBe(0);
    expect(await send('one')).toMatchObject({ text: 'one', length: 3 });
    expect(await send('two')).toMatchObject({ text: 'two' });
    expect(c.started).toBe(1);
  });

  it('settles each request with the reply of its id, whatever the order of the replies', async () => {
    const { send } = channel();
    const first = send('HOLD', 1);
    const second = send('HOLD', 2);
    const release = send('RELEASE');
    expect((await first).text).toBe('held 1');
    expect((await second).text).toBe('held 2');
    expect((await release).text).toBe('RELEASE');
  });

  it('moves a whole buffer to the worker, and copies a view of a larger one first', async () => {
    const { c } = channel();
    const whole = utf8.encode('whole');
    await c.send(whole, (id, bytes) => ({ id, bytes }));
    expect(whole.byteLength).toBe(0);
    const big = utf8.encode('xxviewxx');
    const view = big.subarray(2, 6);
    expect(await c.send(view, (id, bytes) => ({ id, bytes }))).toMatchObject({ text: 'view', length: 4 });
    expect(new TextDecoder().decode(big)).toBe('xxviewxx');
  });

  it('a worker that dies fails the requests it held; the next body starts a new one', async () => {
    const { c, send } = channel();
    const held = expect(send('HOLD')).rejects.toThrow('test worker stopped: exit code 3');
    await expect(send('EXIT')).rejects.toThrow('test worker stopped: exit code 3');
    await held;
    expect(await send('again')).toMatchObject({ text: 'again' });
    expect(c.started).toBe(2);
  });

  it('stops a worker idle for idleMs, not one a request came to before', async () => {
    const { c, clock, send, lines } = channel({ idleMs: 5000 });
    await send('a');
    await clock.advance(4000);
    await send('b');
    // The idle wait starts again from the last reply.
    await clock.advance(4000);
    expect(c.retired).toBe(0);
    await clock.advance(1000);
    expect(c.retired).toBe(1);
    expect(lines.filter((l) => l.includes('test worker idle: stopped'))).toHaveLength(1);
    await send('c');
    expect(c.started).toBe(2);
  });

  it('close() fails what is in flight and takes no more', async () => {
    const { c, send } = channel();
    const held = expect(send('HOLD')).rejects.toThrow('test worker closed');
    await c.close();
    await held;
    expect(c.closed).toBe(true);
  });

  // ParsePool checks `closed` before it sends; the channel keeps its own word too.
  it('takes no body once closed: no worker is started for it', async () => {
    const { c, send } = channel();
    await send('before');
    await c.close();
    await expect(send('after')).rejects.toThrow('test worker closed');
    expect(c.started).toBe(1);
  });

  it('a missing worker file: unavailable, said once', () => {
    const { c, lines } = channel({ url: pathToFileURL(join(dir, 'no-such-worker.mjs')) });
    expect(c.available).toBe(false);
    expect(lines.filter((l) => l.includes('test worker not found'))).toHaveLength(1);
    expect(c.started).toBe(0);
  });
});
