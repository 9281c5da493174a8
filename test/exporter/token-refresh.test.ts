/**
 * The token-refresh policy (src/exporter/token-refresh.ts): after a poll round, a refusal (401/403) among its
 * failures reads the token again, once, whichever API was refused; other failures leave it alone. On a mount that
 * caches file attributes (the content changes, `stat` does not) that re-read is the only way the rotated token is
 * seen. A token file that cannot be read again is logged, without the token; a login renews on its own and logs
 * its own failures, so its error is not logged again here.
 */
import { describe, expect, it } from 'vitest';
import { LoginError } from '../../src/auth/login-error.js';
import { FileToken, type TokenFs, type TokenSource } from '../../src/config/token.js';
import { rereadIfRefused, rereadToken } from '../../src/exporter/token-refresh.js';
import { ApiError, type ApiName } from '../../src/http/errors.js';
import { captureLog } from '../helpers/log-capture.js';

/** A token file on a mount whose attributes never change: only a read sees a new content. */
function cachedMount(content: string) {
  const file = { content, readable: true, reads: 0 };
  const fs: TokenFs = {
    stat: () => ({ ino: 1n, size: 20n, mtimeNs: 0n, ctimeNs: 0n }),
    read: () => {
      file.reads++;
      if (!file.readable) throw Object.assign(new Error('EACCES'), { code: 'EACCES' });
      return file.content;
    },
  };
  return { file, token: new FileToken('/run/secrets/cdn-token', fs) };
}

const refused = (api: ApiName, status: 401 | 403) =>
  new ApiError({ api, kind: 'auth', status, endpoint: 'GET /x', description: 'Invalid token' });
const serverError = new ApiError({ api: 'metrics', kind: 'server', status: 500, endpoint: 'GET /x' });

describe('rereadIfRefused', () => {
  it('picks up a rotated token that stat cannot see, after a refusal of any API', () => {
    for (const api of ['metrics', 'dvr-net', 'recorder-cloud'] as const) {
      const { file, token } = cachedMount('tok-old-0001');
      const { log } = captureLog();
      expect(token.get()).toBe('tok-old-0001');
      file.content = 'tok-new-0002';
      expect(token.get()).toBe('tok-old-0001');
      rereadIfRefused([serverError, refused(api, api === 'metrics' ? 401 : 403)], token, log);
      expect(token.get(), api).toBe('tok-new-0002');
    }
  });

  it('reads the token once per round, however many failures were refusals', () => {
    let refreshes = 0;
    const token: TokenSource = {
      description: 'inline',
      get: () => 't',
      refresh: () => {
        refreshes++;
        return 't';
      },
    };
    const { log } = captureLog();
    rereadIfRefused([refused('dvr-net', 403), refused('dvr-net', 403), refused('dvr-net', 401)], token, log);
    expect(refreshes).toBe(1);
  });

  it('leaves the token alone when no failure is a refusal', () => {
    const { file, token } = cachedMount('tok-old-0001');
    const { log } = captureLog();
    token.get();
    file.content = 'tok-new-0002';
    const reads = file.reads;
    rereadIfRefused([serverError, new Error('socket hang up')], token, log);
    rereadIfRefused([], token, log);
    expect(file.reads).toBe(reads);
    expect(token.get()).toBe('tok-old-0001');
  });
});

describe('rereadToken', () => {
  it('logs a token file it cannot read again, naming the file and the reason, never the token', () => {
    const { file, token } = cachedMount('tok-secret-4242');
    const { log, lines } = captureLog();
    token.get();
    file.readable = false;
    rereadToken(token, log);
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toMatchObject({
      level: 50, // pino's error
      msg: 'reading the token again failed',
      error: expect.stringContaining('token file /run/secrets/cdn-token: permission denied'),
    });
    expect(lines[0]).not.toContain('tok-secret-4242');
  });

  it('leaves a login failure to the login, which logs its own', () => {
    const { log, lines } = captureLog();
    const login: TokenSource = {
      description: 'login monitoring@example.com',
      get: () => 'x',
      refresh: () => {
        throw new LoginError('monitoring@example.com', 'login-refused', '401: bad credentials', 401);
      },
    };
    rereadToken(login, log);
    expect(lines).toEqual([]);
  });
});
