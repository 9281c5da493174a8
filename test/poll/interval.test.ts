/** pollEvery (src/poll/interval.ts) refuses an interval that would poll in a busy loop. */
import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/log.js';
import { pollEvery } from '../../src/poll/interval.js';
import { FakeClock } from '../helpers/fake-clock.js';

describe('pollEvery', () => {
  it('refuses an interval that would poll in a busy loop', async () => {
    const log = silentLogger;
    const controller = new AbortController();
    for (const bad of [0, -5, Number.NaN]) {
      await expect(pollEvery(bad, new FakeClock(0), controller.signal, async () => {}, log)).rejects.toThrow(
        'poll interval must be a finite number of ms >= 1',
      );
    }
  });
});
