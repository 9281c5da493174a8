/**
 * The password, its file's content and every token the login issued appear nowhere an operator or a scraper can
 * see: not in a log line (debug included), not on the landing page, /readyz or /metrics, not in an error the
 * pollers keep, not in check-config's output.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MINUTE } from '../../src/clock.js';
import { checkConfigReport } from '../../src/config/index.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { captureLog } from '../helpers/log-capture.js';
import { perTest } from '../helpers/per-test.js';
import { configFrom, quiet } from '../helpers/stack.js';

const USER = 'sre@example.com';
const PASSWORD = 'Pa55-w0rd-never-shown';
const WRONG = 'wr0ng-pa55-never-shown';

const started = perTest();

describe('secrets of a login', () => {
  it('never shows the password, the file content or any issued token', async () => {
    const dir = started.folder('cdn-secrets-');
    const file = join(dir, 'password');
    writeFileSync(file, `${WRONG}\n`);
    const clock = new FakeClock(Date.UTC(2026, 5, 1, 0, 0, 0));
    const { log, lines } = captureLog();
    const config = {
      api: { token: undefined, username: USER, password_file: file },
      metrics: { lookback: '30m', delay: '0m', window: '5m' },
      dvr: { interval: '1m' },
      recordings: { interval: '1m' },
      accounts: [
        { name: 'demo', dvr_streams: ['live/main'], recordings: true },
        { name: 'acme', username: USER, password: PASSWORD },
      ],
    };
    const s = await started.stack({
      clock,
      sim: {
        tokenLifetimeMs: 2 * MINUTE,
        users: [{ username: USER, password: PASSWORD, accounts: ['demo', 'acme'] }],
      },
      config,
      exporter: { log },
    });
    const seen: string[] = [];
    const look = async () => {
      await s.exporter.store.refresh();
      for (const path of ['/', '/metrics', '/readyz', '/healthz'])
        seen.push(await (await fetch(`${s.url}${path}`)).text());
      seen.push(JSON.stringify(s.exporter.status()));
    };
    const walk = async (minutes: number) => {
      for (let i = 0; i < minutes * 6; i++) {
        await clock.advance(10_000);
        await quiet(s);
      }
    };
    await walk(3);
    await look();
    writeFileSync(file, `${PASSWORD}\n`);
    await walk(10);
    await look();
    s.sim.revokeTokens(USER);
    await walk(3);
    s.sim.setFaults({ '500': 0.3, malformed: 0.2 });
    await walk(5);
    await look();
    seen.push(checkConfigReport(configFrom({ ...config, api: { ...config.api, base_url: s.sim.url } })));

    const tokens = s.sim.issuedTokens();
    // Renewals happened (2-minute tokens), on both logins (file and inline password).
    expect(tokens.length).toBeGreaterThan(8);
    expect(s.sim.logins.some((l) => l.result === 'wrong')).toBe(true);
    const everything = [...lines, ...seen].join('\n');
    expect(lines.some((l) => l.includes('login refused'))).toBe(true);
    expect(seen.join('\n')).toContain('cdn_auth_logins_total');
    for (const secret of [PASSWORD, WRONG, ...tokens]) {
      expect(everything.includes(secret), 'a secret was shown').toBe(false);
      expect(everything.includes(encodeURIComponent(secret))).toBe(false);
    }
  }, 60_000);
});
