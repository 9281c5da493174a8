/**
 * The registry of secrets (src/redact.ts): every encoded form of a registered secret, and every stretch of 8 or more
 * characters of one, is masked in any text; nothing else is touched.
 */
import { describe, expect, it } from 'vitest';
import type { LoginOutcome } from '../src/auth/login.js';
import { REDACTED, SECRETS, SecretRegistry } from '../src/redact.js';
import { FakeClock } from './helpers/fake-clock.js';
import { runLogin, testLoginToken } from './helpers/login-token.js';
import { passwordFile } from './helpers/password-file.js';

const TOKEN = 'Zx8-Q/w+e r"t&y9Lm';

function registry(): SecretRegistry {
  const r = new SecretRegistry();
  r.add(TOKEN);
  return r;
}

describe('the secret registry', () => {
  it.each([
    ['as is', TOKEN],
    ['URL-encoded', encodeURIComponent(TOKEN)],
    ['form-encoded', encodeURIComponent(TOKEN).replace(/%20/g, '+')],
    ['JSON-escaped', JSON.stringify(TOKEN).slice(1, -1)],
    ['base64', Buffer.from(TOKEN).toString('base64')],
    ['base64url', Buffer.from(TOKEN).toString('base64url')],
    ['base64 inside a longer blob', Buffer.from(`user:${TOKEN}`).toString('base64')],
    ['base64url shifted by two bytes', Buffer.from(`ab${TOKEN}`).toString('base64url')],
    ['its first 10 characters', TOKEN.slice(0, 10)],
    ['an 8-character slice', TOKEN.slice(5, 13)],
  ])('masks the token %s, wherever it sits in a text', (_form, text) => {
    const r = registry();
    const out = r.redact(`before ${text} after`);
    expect(out.startsWith('before ')).toBe(true);
    expect(out).toContain(REDACTED);
    // Not one 8-character stretch of the form survives.
    for (let i = 0; i + 8 <= text.length; i++) expect(out).not.toContain(text.slice(i, i + 8));
  });

  it('leaves texts without a secret as they are, and the same string object', () => {
    const r = registry();
    const text = 'metrics GET /app/metrics/v1/resources: 500 server';
    expect(r.redact(text)).toBe(text);
    expect(r.redact('Zx8-Q/w')).toBe('Zx8-Q/w');
    expect(r.contains(text)).toBe(false);
  });

  it('masks a run of overlapping slices as one marker and counts where', () => {
    const r = registry();
    expect(r.redact(`a${TOKEN}b${TOKEN}`, 'log')).toBe(`a${REDACTED}b${REDACTED}`);
    expect(r.redactions('log')).toBe(1);
  });

  it('masks a short secret only whole, and ignores one under 4 characters', () => {
    const r = new SecretRegistry();
    r.add('pw12');
    r.add('ab');
    expect(r.redact('x pw12 y ab')).toBe(`x ${REDACTED} y ab`);
  });

  it('never takes the marker itself for a secret (a printed configuration loaded again)', () => {
    const r = registry();
    r.add(REDACTED);
    expect(r.redact(`tokens ${REDACTED}`)).toBe(`tokens ${REDACTED}`);
  });

  it('knows a secret added later (a password, an issued login token)', () => {
    const r = registry();
    const issued = 'eyJhbGciOiJIUzI1NiJ9.issued';
    expect(r.contains(issued)).toBe(false);
    r.add(issued);
    expect(r.redact(`Bearer ${issued}`)).toBe(`Bearer ${REDACTED}`);
  });
});

describe('a login registers its secrets', () => {
  it('masks the inline password, each password read from its file and every token issued, wherever redacted', async () => {
    const clock = new FakeClock();
    const { fs, replace } = passwordFile('file-password-one');
    let n = 0;
    const issued: string[] = [];
    const send = async (): Promise<LoginOutcome> => {
      const token = `issued-token-${n++}-abcdefgh`;
      issued.push(token);
      return { ok: true, token, lifetimeMs: 10_000, lifetimeAssumed: false };
    };
    testLoginToken({ clock, credential: { username: 'u', password: 'inline-password-xyz' }, send });
    expect(SECRETS.redact('pw=inline-password-xyz')).toBe(`pw=${REDACTED}`);

    const source = testLoginToken({ clock, credential: { username: 'u', passwordFile: '/pw' }, fs, send });
    const stop = await runLogin(source);
    replace('file-password-two');
    for (let i = 0; i < 70; i++) await clock.advance(1000);
    await stop();
    expect(issued.length).toBeGreaterThan(1);
    // The secrets in use are masked; those they replaced are dropped (the registry holds live secrets only).
    for (const secret of [issued.at(-1)!, 'file-password-two']) {
      expect(SECRETS.redact(`echo ${secret} echo`)).toBe(`echo ${REDACTED} echo`);
    }
    for (const secret of [...issued.slice(0, -1), 'file-password-one'])
      expect(SECRETS.has(secret)).toBe(false);
  });
});
