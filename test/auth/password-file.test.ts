/**
 * A login's `password_file` (src/auth/password-file.ts), through PasswordFile.read on an in-memory file system:
 * the file is read again only when its stat changes; a trailing newline is not part of the password, other
 * whitespace is; an empty or missing file is unreadable, said in our words (the file and the cause, never its
 * content), logged once per change of cause and once when readable again; each password read is registered as a
 * secret and the one it replaces dropped.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { PasswordFile, type PasswordFs } from '../../src/auth/password-file.js';
import { SECRETS } from '../../src/redact.js';
import { captureLog } from '../helpers/log-capture.js';

const PATH = '/run/secrets/cdn-password';

/**
 * One file in memory: `write` changes its content and stat, `remove` makes it missing, `restore` brings it back as
 * it was (the same stat, as a mount that went away and came back); reads are counted.
 */
function memoryFile(initial: string | undefined) {
  let content = initial;
  let version = 1n;
  let missing = initial === undefined;
  const f = {
    reads: 0,
    fs: {
      stat: () => {
        if (missing || content === undefined)
          throw Object.assign(new Error(`ENOENT: ${PATH}`), { code: 'ENOENT' });
        return { ino: 7n, size: BigInt(Buffer.byteLength(content)), mtimeNs: version, ctimeNs: version };
      },
      read: () => {
        f.reads++;
        if (missing || content === undefined)
          throw Object.assign(new Error(`ENOENT: ${PATH}`), { code: 'ENOENT' });
        return content;
      },
    } satisfies PasswordFs,
    write(next: string) {
      content = next;
      version++;
      missing = false;
    },
    remove() {
      missing = true;
    },
    restore() {
      missing = false;
    },
  };
  return f;
}

const registered = new Set<string>();
afterEach(() => {
  for (const s of registered) SECRETS.remove(s);
  registered.clear();
});
/** Whether the registry masks `secret` now (and remember to drop it after the test). */
function masked(secret: string): boolean {
  registered.add(secret);
  return !SECRETS.redact(`x ${secret} y`, 'test').includes(secret);
}

function setup(initial: string | undefined) {
  const file = memoryFile(initial);
  const { log, lines } = captureLog();
  const pw = new PasswordFile(PATH, file.fs, log, 'monitoring@example.com');
  return { file, pw, lines: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>) };
}

describe('PasswordFile', () => {
  it('gives the password without its trailing newline, other whitespace kept', () => {
    expect(setup('s3cret-pw-one\n').pw.read()).toEqual({ password: 's3cret-pw-one' });
    expect(setup('s3cret-pw-two\r\n\n').pw.read()).toEqual({ password: 's3cret-pw-two' });
    expect(setup(' s3cret pw three\t').pw.read()).toEqual({ password: ' s3cret pw three\t' });
    for (const s of ['s3cret-pw-one', 's3cret-pw-two', ' s3cret pw three\t']) registered.add(s);
  });

  it('reads the file again only when its stat changes', () => {
    const { file, pw } = setup('Kq7vXm2pLwHd\n');
    pw.read();
    pw.read();
    pw.read();
    expect(file.reads).toBe(1);
    file.write('Zt4nRb8sYeGc\n');
    expect(pw.read()).toEqual({ password: 'Zt4nRb8sYeGc' });
    expect(file.reads).toBe(2);
    pw.read();
    expect(file.reads).toBe(2);
  });

  it('registers the password read as a secret, and drops the one it replaces', () => {
    const { file, pw } = setup('Kq7vXm2pLwHd\n');
    pw.read();
    expect(masked('Kq7vXm2pLwHd')).toBe(true);
    file.write('Zt4nRb8sYeGc\n');
    pw.read();
    expect(masked('Zt4nRb8sYeGc')).toBe(true);
    expect(masked('Kq7vXm2pLwHd')).toBe(false);
  });

  it('says why an empty or missing file cannot be read, naming the file and never its content', () => {
    const empty = setup('\n');
    expect(empty.pw.read()).toEqual({ unreadable: `password file ${PATH}: is empty` });
    const missing = setup(undefined);
    expect(missing.pw.read()).toEqual({ unreadable: `password file ${PATH}: does not exist` });
  });

  it('logs an unreadable file once per cause, and once when it is readable again', () => {
    const { file, pw, lines } = setup('Kq7vXm2pLwHd\n');
    pw.read();
    file.remove();
    pw.read();
    pw.read();
    file.write('\n');
    pw.read();
    pw.read();
    file.write('Zt4nRb8sYeGc\n');
    expect(pw.read()).toEqual({ password: 'Zt4nRb8sYeGc' });
    pw.read();
    const logged = lines().map((l) => [l.level, l.msg, l.error ?? l.file, l.login]);
    expect(logged).toEqual([
      [50, 'cannot log in', `password file ${PATH}: does not exist`, 'monitoring@example.com'],
      [50, 'cannot log in', `password file ${PATH}: is empty`, 'monitoring@example.com'],
      [30, 'password file readable again', PATH, 'monitoring@example.com'],
    ]);
    const text = JSON.stringify(lines());
    expect(text).not.toContain('Kq7vXm2pLwHd');
    expect(text).not.toContain('Zt4nRb8sYeGc');
  });

  it('gives no password while the file is unreadable, even one read before', () => {
    const { file, pw } = setup('Kq7vXm2pLwHd\n');
    pw.read();
    file.remove();
    expect(pw.read()).toHaveProperty('unreadable');
    // Back as it was, the same stat: read again, not taken from before.
    file.restore();
    const reads = file.reads;
    expect(pw.read()).toEqual({ password: 'Kq7vXm2pLwHd' });
    expect(file.reads).toBe(reads + 1);
  });
});
