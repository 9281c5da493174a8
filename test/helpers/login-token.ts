/** A LoginToken as the auth tests drive it: built with test defaults, run until the test stops it. */
import { LoginToken, type LoginTokenOptions } from '../../src/auth/login-token.js';
import { silentLogger } from '../../src/log.js';

/** User `u` with password `p` at `http://x` (never dialled when `send` is given), silent; `o` overrides. */
export function testLoginToken(o: Partial<LoginTokenOptions> & Pick<LoginTokenOptions, 'clock'>): LoginToken {
  return new LoginToken({
    credential: { username: 'u', password: 'p' },
    baseUrl: 'http://x',
    log: silentLogger,
    ...o,
  });
}

/** Starts `token`'s loop; resolves once its first login attempt settled, with the function that stops the loop. */
export async function runLogin(token: LoginToken): Promise<() => Promise<void>> {
  const ctl = new AbortController();
  const loop = token.run(ctl.signal);
  await token.firstAttempt;
  return async () => {
    ctl.abort();
    await loop;
  };
}
