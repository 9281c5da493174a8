/**
 * A token rotated where `stat` cannot see it (an attribute-caching mount: the file's content changes, its inode,
 * size and times do not). Only the re-read after a refusal (401/403) can pick the new token up, and every API must
 * do it: the first refused poll re-reads the token, so the next poll, one interval later, is accepted.
 *
 * Each test polls one API alone (a metrics window of 5 m with a 5 m delay asks for nothing in the first five
 * minutes), so a refusal of another API cannot re-read the token on its behalf.
 */
import { describe, expect, it } from 'vitest';
import { MINUTE } from '../../src/clock.js';
import type { TokenFs } from '../../src/config/index.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { perTest } from '../helpers/per-test.js';
import { e2eWorld, RoundStepper } from '../helpers/poll-rounds.js';
import { type Stack, waitFor } from '../helpers/stack.js';

const T0 = Date.UTC(2026, 2, 10, 12, 0, 0);
const TOKEN_FILE = '/run/secrets/cdn-token';
const NEW_TOKEN = 'demo-token-rotated';

/** A token file whose stat never changes: only a forced re-read sees a new content. */
class StaleStatFs implements TokenFs {
  content = 'demo-token\n';
  reads = 0;
  stat() {
    return { ino: 7n, size: 11n, mtimeNs: 1n, ctimeNs: 1n };
  }
  read(): string {
    this.reads++;
    return this.content;
  }
}

const started = perTest();

async function setup(account: Record<string, unknown>) {
  const clock = new FakeClock(T0);
  const fs = new StaleStatFs();
  const stack = await started.stack({
    clock,
    sim: { accounts: e2eWorld() },
    config: {
      metrics: { window: '5m', delay: '5m', lookback: '5m' },
      dvr: { interval: '1m' },
      recordings: { interval: '1m' },
      accounts: [{ name: 'demo', token_file: TOKEN_FILE, ...account }],
    },
    // The production probing while a token is refused: 1 min doubling to 10 min.
    exporter: { tokenFs: fs, authBackoff: { baseMs: MINUTE, capMs: 10 * MINUTE } },
  });
  return { clock, fs, stack };
}

/** The CDN rotates the account's token; the file gets the new one, but `stat` shows no change. */
function rotate(s: Stack, fs: StaleStatFs): void {
  s.sim.setToken('demo', NEW_TOKEN);
  fs.content = `${NEW_TOKEN}\n`;
}

describe('a token rotated where stat cannot see it', () => {
  for (const [api, account] of [
    ['dvr-net', { dvr_streams: ['live/main', 'sport/4k'] }],
    ['recorder-cloud', { recordings: true }],
  ] as const) {
    it(`${api}: accepted again one poll interval after its first refusal`, async () => {
      const { clock, fs, stack: s } = await setup(account);
      const steps = new RoundStepper(s, clock);
      const key = [[api, 'demo']] as const;
      await steps.settled(key);
      expect(steps.round(api, 'demo')?.ok).toBe(true);

      rotate(s, fs);
      const refused = await steps.step(MINUTE, key);
      expect(steps.round(api, 'demo')?.ok).toBe(false);
      expect(refused.value('cdn_up', { api, account: 'demo' })).toBe(0);

      const back = await steps.step(MINUTE, key);
      expect(steps.round(api, 'demo')?.ok).toBe(true);
      expect(back.value('cdn_up', { api, account: 'demo' })).toBe(1);
      // No metrics window was due: the re-read came from this API's own refusal.
      expect(s.sim.requestLog.filter((e) => e.api === 'metrics')).toEqual([]);
    }, 20_000);
  }

  it('metrics: accepted again one poll interval (window) after its first refusal', async () => {
    const { clock, fs, stack: s } = await setup({});
    const up = async () => (await s.scrape()).value('cdn_up', { api: 'metrics', account: 'demo' });
    const metricsStatuses = () =>
      s.sim.requestLog.filter((e) => e.api === 'metrics' && e.status !== 0).map((e) => e.status);

    // The first window [T0-5m, T0) is due at T0+5m.
    await clock.advance(5 * MINUTE);
    await waitFor(async () => (await up()) === 1, 5000, 'the first window answered');

    rotate(s, fs);
    await clock.advance(5 * MINUTE);
    await waitFor(() => metricsStatuses().includes(403), 5000, 'the first refusal');
    await waitFor(async () => (await up()) === 0, 5000, 'cdn_up 0 after the refusal');

    // One window later at most, the refused window is asked for again, with the token read again.
    await clock.advance(5 * MINUTE);
    await waitFor(async () => (await up()) === 1, 5000, 'metrics accepted again');
    expect(metricsStatuses().filter((st) => st === 403)).toHaveLength(1);
  }, 20_000);
});
