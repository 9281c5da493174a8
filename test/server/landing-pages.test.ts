/**
 * The pages as the app serves them (src/server/landing-pages.ts), without HTTP: what a request's query may ask
 * (`?page=`, `?q=`, `?refresh=off`) and the 400 text when it cannot be read; the account page only for an account
 * whose traffic is polled; a page made anew when the clock goes back; a secret registered with src/redact.ts after
 * a page was made masked from the next page on; the gzip made once, the same page. The cache's lifetime, its
 * least-recently-used bound and gzip over HTTP: test/server/landing-bounds.test.ts.
 */
import { gunzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { SECRETS } from '../../src/redact.js';
import { MAX_SEARCH_CHARS, PAGE_TTL_MS } from '../../src/server/landing.js';
import { LandingPages, landingQuery } from '../../src/server/landing-pages.js';
import type { AccountStatus, ExporterStatus } from '../../src/server/status.js';
import { TrafficHistory } from '../../src/server/traffic-history.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { answer, rec } from './history-answers.js';

const T0 = Date.UTC(2026, 2, 10, 12, 0);

function status(accounts: AccountStatus[]): ExporterStatus {
  return {
    ready: true,
    version: 'test',
    startedAt: new Date(T0),
    accounts,
    problems: { dvr: [], recordings: [] },
  };
}

const ok = (name: string, api = 'metrics', lastError?: string): AccountStatus => ({
  name,
  api,
  up: true,
  tried: true,
  lastSuccess: new Date(T0),
  ...(lastError ? { lastError } : {}),
});

describe('landingQuery', () => {
  it('reads page, q and refresh, with their defaults', () => {
    expect(landingQuery({})).toEqual({ view: { refresh: true, page: 1, q: '' } });
    expect(landingQuery({ page: '3', q: '  acme ', refresh: 'off' })).toEqual({
      view: { refresh: false, page: 3, q: 'acme' },
    });
    // Only `off` turns the reload off; an empty page is the first.
    expect(landingQuery({ refresh: 'no', page: '' })).toEqual({ view: { refresh: true, page: 1, q: '' } });
    // Past the last page is left to the page (it shows the last); a number of nine digits is still a page.
    expect(landingQuery({ page: '999999999' })).toEqual({
      view: { refresh: true, page: 999_999_999, q: '' },
    });
  });

  it('refuses a page that is not a whole number from 1, or too long to be one', () => {
    for (const page of ['0', '-1', '1.5', '01', 'two', '1e3', ' 2', '1000000000'])
      expect(landingQuery({ page }), page).toEqual({ error: 'page must be a whole number from 1' });
  });

  it('refuses a key given more than once, naming it', () => {
    expect(landingQuery({ q: ['a', 'b'] })).toEqual({ error: 'q given more than once' });
    expect(landingQuery({ page: ['1', '2'] })).toEqual({ error: 'page given more than once' });
    expect(landingQuery({ refresh: { off: '' } })).toEqual({ error: 'refresh given more than once' });
  });

  it(`takes a search of ${MAX_SEARCH_CHARS} characters, counted as characters (not UTF-16 units), after trimming`, () => {
    const emoji = '🚀'.repeat(MAX_SEARCH_CHARS);
    expect(landingQuery({ q: emoji })).toEqual({ view: { refresh: true, page: 1, q: emoji } });
    expect(landingQuery({ q: ` ${'x'.repeat(MAX_SEARCH_CHARS)} ` })).toHaveProperty('view');
    expect(landingQuery({ q: `${emoji}x` })).toEqual({
      error: `q (the search) is longer than ${MAX_SEARCH_CHARS} characters`,
    });
  });
});

describe('LandingPages', () => {
  const registered: string[] = [];
  afterEach(() => {
    for (const s of registered.splice(0)) SECRETS.remove(s);
  });

  function pages(accounts: AccountStatus[], withHistory = true) {
    const clock = new FakeClock(T0);
    let reads = 0;
    const history = new TrafficHistory();
    history.record('acme', T0 - 60_000, T0, answer(rec('r1', 600, 1e6)));
    const p = new LandingPages({
      status: () => {
        reads++;
        return status(accounts);
      },
      clock,
      secrets: () => [],
      ...(withHistory ? { history: (a: string) => history.get(a) } : {}),
    });
    return { p, clock, reads: () => reads };
  }

  it('has an account page only for an account whose traffic is polled, and only with a history kept', () => {
    const { p } = pages([ok('acme'), ok('globex', 'dvr-net')]);
    expect(p.account('acme')?.body.toString()).toContain('<h1>acme</h1>');
    expect(p.account('globex')).toBeUndefined();
    expect(p.account('nobody')).toBeUndefined();
    expect(pages([ok('acme')], false).p.account('acme')).toBeUndefined();
  });

  it('makes the page anew when the clock goes back, as it does once PAGE_TTL_MS has passed', async () => {
    const { p, clock, reads } = pages([ok('acme')]);
    const first = p.landing({ refresh: true });
    expect(p.landing({ refresh: true })).toBe(first);
    expect(reads()).toBe(1);
    clock.set(T0 - 1);
    expect(p.landing({ refresh: true })).not.toBe(first);
    expect(reads()).toBe(2);
    await clock.advance(PAGE_TTL_MS);
    p.landing({ refresh: true });
    expect(reads()).toBe(3);
  });

  it('keeps one page per view: refresh on and off, page and search are different pages', () => {
    const { p } = pages([ok('acme'), ok('globex')]);
    const on = p.landing({ refresh: true });
    const off = p.landing({ refresh: false });
    expect(off).not.toBe(on);
    expect(on.body.toString()).toContain('<meta http-equiv="refresh"');
    expect(off.body.toString()).not.toContain('<meta http-equiv="refresh"');
    const found = p.landing({ refresh: true, q: 'glob' });
    expect(found.body.toString()).toContain('whose name contains “glob”');
    expect(p.landing({ refresh: true, q: 'glob', page: 1 })).toBe(found);
  });

  it('masks a secret registered after a page was made, from the next page on, within the same moment', () => {
    const secret = 'tok-landing-pages-9f3a2b';
    const { p, reads } = pages([ok('acme', 'metrics', `401: ${secret} refused`)]);
    expect(p.landing({ refresh: true }).body.toString()).toContain(secret);
    SECRETS.add(secret);
    registered.push(secret);
    const after = p.landing({ refresh: true }).body.toString();
    expect(after).not.toContain(secret);
    expect(after).toContain('&#60;redacted&#62; refused');
    expect(reads()).toBe(1);
  });

  it('gzips a page once, on demand, to the same bytes', () => {
    const { p } = pages([ok('acme')]);
    const page = p.landing({ refresh: true });
    const gz = page.gzip();
    expect(page.gzip()).toBe(gz);
    expect(gunzipSync(gz).equals(page.body)).toBe(true);
  });

  it('throws what the status throws, and serves again once it answers', () => {
    let fail = true;
    const p = new LandingPages({
      status: () => {
        if (fail) throw new Error('status board broken');
        return status([ok('acme')]);
      },
      clock: new FakeClock(T0),
      secrets: () => [],
    });
    expect(() => p.landing({ refresh: true })).toThrow('status board broken');
    fail = false;
    expect(p.landing({ refresh: true }).body.toString()).toContain('<!DOCTYPE html>');
  });
});
