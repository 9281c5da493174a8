/**
 * The landing page and the account page as rendered (src/server/landing.ts): every text from the status (names,
 * errors, causes, problem rows, notes, the settings, the version, the search) is redacted, then escaped, so a
 * token shows nowhere, in any of its encoded forms, and no text can add markup; a secret is masked before a long
 * text is cut, so no part of it shows either. The links a page makes read back as the same view, the summary counts
 * every account by its rank, and a page past the last shows the last. Order, paging, the bound on size and the
 * cut of long texts: test/server/landing-bounds.test.ts; rows and settings against the simulator:
 * test/server/landing-status.test.ts.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  DOC_LINKS,
  landingHref,
  landingOverview,
  MAX_TEXT_CHARS,
  PAGE_ACCOUNTS,
  renderAccountPage,
  renderLanding,
  viewAccounts,
} from '../../src/server/landing.js';
import { landingQuery } from '../../src/server/landing-pages.js';
import type { AccountStatus, ExporterStatus } from '../../src/server/status.js';
import { pageText, tableRows } from '../helpers/landing-html.js';

const T0 = Date.UTC(2026, 2, 10, 12, 0);
const TOKEN = 'tok-9c1e77ab5f2d';
/** Markup and the token in the forms an upstream may echo it: plain, URL-encoded, JSON-escaped. */
const HOSTILE = `<i>x</i>"'& ${TOKEN} ${encodeURIComponent(`${TOKEN}/+`)} ${JSON.stringify(`"${TOKEN}"`)}`;

function hostileStatus(): ExporterStatus {
  const row = (api: string): AccountStatus => ({
    name: `acme ${HOSTILE}`,
    api,
    up: false,
    tried: true,
    cause: `login refused ${HOSTILE}`,
    lastError: `401: ${HOSTILE}`,
    lastErrorAt: new Date(T0 - 5000),
    errorsSinceSuccess: 2,
    refused: { [`max_series ${HOSTILE}`]: 3 },
  });
  return {
    ready: false,
    version: `1.0 ${HOSTILE}`,
    startedAt: new Date(T0 - 3600_000),
    accounts: [row('metrics'), row('dvr-net')],
    problems: {
      dvr: [
        { account: `acme ${HOSTILE}`, stream: `s ${HOSTILE}`, host: `h ${HOSTILE}`, problem: `p ${HOSTILE}` },
      ],
      recordings: [
        {
          account: `acme ${HOSTILE}`,
          id: `id ${HOSTILE}`,
          sourceDomain: `d ${HOSTILE}`,
          sourcePath: `/p ${HOSTILE}`,
          resourceId: `r ${HOSTILE}`,
          status: `error ${HOSTILE}`,
          problem: `p ${HOSTILE}`,
        },
      ],
    },
    settings: {
      shard: 0,
      shards: 1,
      accountsConfigured: 1,
      accountsOwned: 1,
      apiHost: `api.example ${HOSTILE}`,
      windowMs: 600_000,
      delayMs: 300_000,
      lookbackMs: 3600_000,
      requestsPerSecond: 5,
      concurrency: 2,
    },
    notes: [`state file kept aside: ${HOSTILE}`],
  };
}

/** No form of the token, and no markup but the page's own (its tags are known; `<i>` is not one of them). */
function expectClean(html: string): void {
  expect(html).not.toContain(TOKEN);
  expect(html).not.toContain(encodeURIComponent(TOKEN));
  expect(html).not.toContain('<i>');
  expect(html).not.toMatch(/"'&[^#]/);
}

const up = (name: string, over: Partial<AccountStatus> = {}): AccountStatus => ({
  name,
  api: 'metrics',
  up: true,
  tried: true,
  lastSuccess: new Date(T0),
  ...over,
});
const plain = (accounts: AccountStatus[]): ExporterStatus => ({
  ready: true,
  version: 'test',
  startedAt: new Date(T0),
  accounts,
  problems: { dvr: [], recordings: [] },
});

describe('renderLanding: what it shows', () => {
  it('masks the token and escapes every text of the status, each table row still there', () => {
    const html = renderLanding(hostileStatus(), { now: T0, secrets: [TOKEN], q: 'acme' });
    expectClean(html);
    const accounts = tableRows(html, 'accounts');
    expect(accounts).toHaveLength(2);
    expect(accounts[0]![0]).toContain('acme <i>x</i>"\'& <redacted>');
    expect(accounts[0]![2]).toContain('down: login refused <i>x</i>');
    expect(tableRows(html, 'dvr problems')).toHaveLength(1);
    expect(tableRows(html, 'recording problems')[0]![1]).toContain('d <i>x</i>"\'& <redacted>');
    expect(tableRows(html, 'refused series')).toHaveLength(2);
    const text = pageText(html);
    expect(text).toContain('state file kept aside: <i>x</i>');
    expect(text).toContain('version 1.0 <i>x</i>');
    expect(text).toContain('API api.example <i>x</i>');
  });

  it('masks a secret before cutting a long text, so no part of it shows at the cut', () => {
    // The token starts a few characters before MAX_TEXT_CHARS: cut first, its first part would show.
    const lastError = `${'x'.repeat(MAX_TEXT_CHARS - 6)}${TOKEN} and more`;
    const html = renderLanding(plain([up('acme', { up: false, lastError })]), { now: T0, secrets: [TOKEN] });
    expect(html).not.toContain(TOKEN.slice(0, 6));
    const cell = tableRows(html, 'accounts')[0]![7]!;
    expect(cell.endsWith(`${'x'.repeat(MAX_TEXT_CHARS - 6)}<redac…`)).toBe(true);
  });

  it('masks the token on the account page too, in the title, heading and body', () => {
    const name = `acme ${HOSTILE}`;
    const html = renderAccountPage(name, { now: T0, secrets: [TOKEN], history: () => undefined });
    expectClean(html);
    expect(pageText(/<h1>.*?<\/h1>/.exec(html)![0]).startsWith('acme <i>x</i>"\'& <redacted> ')).toBe(true);
    expect(pageText(/<title>.*?<\/title>/.exec(html)![0]).startsWith('acme <i>x</i>"\'& <redacted> ')).toBe(
      true,
    );
    expect(html).toContain('<a href="../">cdn-exporter</a>');
  });

  it('counts every account by its worst row in the summary, and links the endpoints and docs', () => {
    const status = plain([
      up('a'),
      up('b', { up: false }),
      up('b', { api: 'dvr-net' }),
      up('c', { errorsSinceSuccess: 1 }),
      { name: 'd', api: 'metrics', up: false },
      up('e'),
    ]);
    status.problems.dvr.push({ account: 'e', stream: 's', problem: 'not alive' });
    const html = renderLanding(status, { now: T0, secrets: [] });
    expect(pageText(/<p class="summary".*?<\/p>/.exec(html)![0])).toBe(
      '5 accounts: 1 down · 1 failing · 1 with problems listed · 1 pending · 1 up · DVR streams with problems: 1 · ' +
        'recordings with problems: 0 · accounts with series refused: 0',
    );
    for (const href of ['/metrics', '/healthz', '/readyz', DOC_LINKS.runbook, DOC_LINKS.dashboards])
      expect(html).toContain(`href="${href}"`);
  });
});

describe('links and views', () => {
  it('a link a page makes reads back, through the query parser, as the same view (property)', () => {
    fc.assert(
      fc.property(
        fc.string({ maxLength: 40 }).map((s) => s.trim()),
        fc.integer({ min: 1, max: 1_000_000 }),
        fc.boolean(),
        (q, page, refresh) => {
          const href = landingHref({ q, page, refresh });
          expect(href).not.toMatch(/[<>"']/);
          const decoded = href.replace(/&#(\d+);/g, (_, n: string) => String.fromCharCode(Number(n)));
          const query = Object.fromEntries(new URLSearchParams(decoded.slice(1)));
          expect(landingQuery(query)).toEqual({ view: { q, page, refresh } });
        },
      ),
    );
    expect(landingHref({})).toBe('?');
    expect(landingHref({ page: 1, refresh: true })).toBe('?');
  });

  it('a page past the last shows the last; a page below 1 the first', () => {
    const names = Array.from({ length: PAGE_ACCOUNTS + 3 }, (_, i) => `acct-${String(i).padStart(3, '0')}`);
    const ov = landingOverview(plain(names.map((n) => up(n))), T0);
    expect(viewAccounts(ov, { page: 99 })).toMatchObject({ page: 2, pages: 2, matched: PAGE_ACCOUNTS + 3 });
    expect(viewAccounts(ov, { page: 99 }).accounts.map((a) => a.name)).toEqual(names.slice(PAGE_ACCOUNTS));
    expect(viewAccounts(ov, { page: 0 }).page).toBe(1);
    expect(viewAccounts(ov, { q: 'ACCT-00' })).toMatchObject({ page: 1, pages: 1, matched: 10 });
    expect(viewAccounts(ov, { q: 'nobody' })).toMatchObject({ accounts: [], page: 1, pages: 1, matched: 0 });
  });
});
