/**
 * The traffic parts of the pages (src/server/traffic-page.ts), on hand-made histories: the figures as the page
 * writes them (bandwidth with decimal prefixes as it is billed, rates, ratios), the account links safe in an
 * attribute whatever the name, the traffic section's cards and its line for the accounts not counted yet, and the
 * account page's body: every text through the page's `t` (redacted, then escaped), the windows newest first, each
 * final or provisional. Provisional marks in detail: test/server/landing-provisional.test.ts; folding:
 * test/server/traffic-folded.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { escapeHtml } from '../../src/server/html.js';
import { type AccountHistory, FIGURES, HISTORY_WINDOWS } from '../../src/server/traffic-history.js';
import {
  accountBody,
  accountHref,
  formatBits,
  formatRate,
  formatRatio,
  trafficSection,
} from '../../src/server/traffic-page.js';
import { pageText, tableRows } from '../helpers/landing-html.js';

const T0 = Date.UTC(2026, 2, 10, 12, 0);
const MIN = 60_000;
/** The page's `t` with a secret to mask, as src/server/landing.ts makes it. */
const t = (s: string) => escapeHtml(s.replaceAll('tok-SECRET', '<redacted>'));

/** Two windows of 5 minutes, the newest `open` (provisional) or final. */
function history(open: boolean): AccountHistory {
  const figures = Object.fromEntries(FIGURES.map((f) => [f, [1, 2]])) as AccountHistory['figures'];
  figures.edgeRequestsPerSecond = [12.5, 1500];
  figures.bandwidthBitsPerSecond = [2e6, 1.23e9];
  figures.edge5xxRatio = [0, 0.0123];
  return {
    starts: [T0, T0 + 5 * MIN],
    ends: [T0 + 5 * MIN, T0 + 10 * MIN],
    figures,
    provisional: [false, open],
    topByTraffic: [
      {
        resource: '<r1>',
        name: 'tok-SECRET & co',
        bandwidthBitsPerSecond: 1.23e9,
        requests: 2000,
        errors5xx: 20,
      },
    ],
    topBy5xx: [],
    resources: 1,
    folded: 0,
  };
}

describe('figures as the page writes them', () => {
  it('bandwidth in bit/s with decimal prefixes, three digits', () => {
    expect(formatBits(0)).toBe('0.00 bit/s');
    expect(formatBits(999)).toBe('999 bit/s');
    expect(formatBits(1000)).toBe('1.00 kbit/s');
    expect(formatBits(1.234e9)).toBe('1.23 Gbit/s');
    expect(formatBits(2.5e12)).toBe('2.50 Tbit/s');
  });

  it('rates with three digits below 1,000 per second, whole and grouped from there', () => {
    expect(formatRate(12.345)).toBe('12.3/s');
    expect(formatRate(0.5)).toBe('0.500/s');
    expect(formatRate(999)).toBe('999/s');
    expect(formatRate(1000)).toBe('1,000/s');
    expect(formatRate(123_456.7)).toBe('123,457/s');
  });

  it('ratios in percent, two decimals below 10%', () => {
    expect(formatRatio(0)).toBe('0.00%');
    expect(formatRatio(0.0123)).toBe('1.23%');
    expect(formatRatio(0.1)).toBe('10.0%');
    expect(formatRatio(1)).toBe('100.0%');
  });
});

describe('accountHref', () => {
  it('is relative, the name encoded as one path segment and safe in an attribute', () => {
    expect(accountHref('acme')).toBe('accounts/acme');
    expect(accountHref('acme', true)).toBe('../accounts/acme');
    expect(accountHref('a b/c?d#e')).toBe('accounts/a%20b%2Fc%3Fd%23e');
    // encodeURIComponent leaves ' as it is; the attribute escaping takes it.
    expect(accountHref(`o'brien"`)).toBe('accounts/o&#39;brien%22');
  });
});

describe('trafficSection', () => {
  it('has a card per account with a history, in the order given, and names the others as not counted yet', () => {
    const html = trafficSection(
      ['<b>new</b>', 'acme', 'tok-SECRET'],
      (a) => (a === 'acme' ? history(false) : undefined),
      t,
      new Date(T0),
    );
    expect(
      [...html.matchAll(/<section class="acct" aria-label="traffic of ([^"]*)">/g)].map((m) => m[1]),
    ).toEqual(['acme']);
    expect(html).toContain('<a href="accounts/acme">acme</a>');
    expect(pageText(/<p class="none">.*?<\/p>/.exec(html)![0])).toBe(
      'No traffic window counted yet since the start for <b>new</b>, <redacted>.',
    );
    expect(html).not.toContain('tok-SECRET');
    expect(html).not.toContain('<b>new');
    const note = pageText(/<p class="small">The newest.*?<\/p>/.exec(html)![0]);
    expect(note).toContain(`the last ${HISTORY_WINDOWS} windows this process counted, kept in memory only`);
    expect(note).toContain('(this one started 2026-03-10 12:00 UTC)');
  });
});

describe('accountBody', () => {
  it('says when nothing was counted for the account, the name through t', () => {
    const html = accountBody('<x tok-SECRET>', undefined, t);
    expect(pageText(html)).toBe(
      'No traffic window of <x <redacted>> counted yet since this process started (the history is kept in memory only).',
    );
    expect(html).not.toContain('<x');
  });

  it('lists the busiest resources through t, and the windows newest first, each final or provisional', () => {
    const html = accountBody('acme', history(true), t);
    expect(html).not.toContain('tok-SECRET');
    expect(tableRows(html, 'top resources by traffic')).toEqual([
      ['<r1>', '<redacted> & co', '1.23 Gbit/s', '2,000', '1.00%'],
    ]);
    expect(pageText(/<p class="none">No resource answered.*?<\/p>/.exec(html)![0])).toBe(
      'No resource answered a 5xx in the newest window.',
    );
    const windows = tableRows(html, 'windows');
    expect(windows.map((r) => [r[0], r[1], r[2], r.at(-1)])).toEqual([
      ['2026-03-10 12:05–12:10', '5', '1,500/s', 'provisional'],
      ['2026-03-10 12:00–12:05', '5', '12.5/s', 'final'],
    ]);
    expect(pageText(html)).toContain('The 2 windows charted, newest first; 1 of them provisional');
    expect(pageText(accountBody('acme', history(false), t))).toContain(
      'The 2 windows charted, newest first, all final.',
    );
  });
});
