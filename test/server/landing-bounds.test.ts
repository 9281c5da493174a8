/**
 * The landing page at any number of accounts (issue 33): a summary of every account, then one page of
 * PAGE_ACCOUNTS accounts, the worst first, with paging and a search; its size does not grow with the accounts;
 * a page is rendered once per PAGE_TTL_MS however many clients ask (the status is read once), served gzipped to
 * clients that accept it; and the HTML pages have their own cap of server.max_scrapes_in_flight.
 */
import { gunzipSync } from 'node:zlib';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/log.js';
import type { AccountStatus, DvrProblem, ExporterStatus } from '../../src/server/app.js';
import {
  CACHED_PAGES,
  MAX_SEARCH_CHARS,
  MAX_TEXT_CHARS,
  PAGE_ACCOUNTS,
  PAGE_TTL_MS,
  PROBLEM_ROWS,
  renderLanding,
} from '../../src/server/landing.js';
import { type AccountHistory, HISTORY_WINDOWS, TrafficHistory } from '../../src/server/traffic-history.js';
import type { TrafficResponse } from '../../src/traffic/response.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { exporterApp } from '../helpers/fake-exposition.js';
import { pageText, tableRows } from '../helpers/landing-html.js';
import { waitFor } from '../helpers/stack.js';
import { listen, type Running, request } from './http.js';

const T0 = Date.UTC(2026, 2, 16, 12, 0, 0);
/** docs/operations.md, "The landing page": the page stays under this whatever the number of accounts. */
const PAGE_BOUND_BYTES = 512 * 1024;

const running: Running[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((r) => r.close()));
});

/** `account-00042`: names of one length, so that pages of any fleet compare byte for byte. */
const nameOf = (i: number): string => `account-${String(i).padStart(5, '0')}`;

/**
 * `n` accounts as a large fleet looks: every account's traffic polled, every third with DVR streams, every fifth
 * with recordings; some down (with an error), some failing, some with DVR problems, some never polled yet.
 */
function fleet(n: number, now = T0): ExporterStatus {
  const accounts: AccountStatus[] = [];
  const dvr: DvrProblem[] = [];
  for (let i = 0; i < n; i++) {
    const name = nameOf(i);
    const lastSuccess = new Date(now - (i % 600) * 1000);
    const pending = i % 50 === 1;
    const down = i % 97 === 0;
    accounts.push(
      pending
        ? { name, api: 'metrics', up: false, tried: false }
        : {
            name,
            api: 'metrics',
            up: !down,
            tried: true,
            cursor: new Date(now - 360_000),
            lagSeconds: 360,
            windowMinutes: 5,
            maxWindowMinutes: 10,
            lastSuccess,
            ...(down
              ? {
                  lastError: '504: execution timeout: the statistics API did not answer within 60 s',
                  lastErrorAt: new Date(now - 30_000),
                  errorsSinceSuccess: 7,
                }
              : {}),
          },
    );
    if (i % 3 === 0) {
      const failing = i % 89 === 0;
      accounts.push({
        name,
        api: 'dvr-net',
        up: true,
        tried: true,
        lastSuccess,
        ...(failing
          ? {
              lastError: 'news/hdd: 404: stream not found',
              lastErrorAt: new Date(now - 5_000),
              errorsSinceSuccess: 2,
            }
          : {}),
      });
    }
    if (i % 5 === 0) accounts.push({ name, api: 'recorder-cloud', up: true, tried: true, lastSuccess });
    if (i % 83 === 0) {
      for (const stream of ['live/main', 'news/hd', 'sport/4k'])
        for (const host of ['dvr-1.example', 'dvr-2.example'])
          dvr.push({ account: name, stream, host, problem: 'coverage 62%' });
    }
  }
  return {
    ready: true,
    version: '0.1.0',
    startedAt: new Date(now - 9 * 3_600_000),
    accounts,
    problems: { dvr, recordings: [] },
  };
}

function answer(w: number): TrafficResponse {
  const records = ['r1', 'r2', 'r3'].map((resource, k) => ({
    resource,
    resourceName: `${resource}.example`,
    edge: {
      codes: new Map<string, number>(),
      classes: new Map([
        ['2xx', 30_000 + ((w * 7919 + k) % 1000)],
        ['5xx', (w + k) % 13],
      ]),
      requestTimeSeconds: new Map<string, number>(),
      bandwidthBitsPerSecond: 1e8 * (1 + ((w * 31) % 17) / 10),
      hitBytes: 3e9,
    },
    origin: {
      codes: new Map<string, number>(),
      classes: new Map([
        ['2xx', 3000],
        ['5xx', w % 5],
      ]),
      requestTimeSeconds: new Map<string, number>(),
    },
  }));
  return { account: 'x', metrics: [], issues: [], unknownKeys: [], records };
}

/** A full history (HISTORY_WINDOWS windows, the newest half provisional): the largest charts there are. */
function fullHistory(): AccountHistory {
  const h = new TrafficHistory();
  for (let w = 0; w < HISTORY_WINDOWS; w++) {
    const end = T0 - (HISTORY_WINDOWS - w) * 300_000;
    h.record('x', end - 300_000, end, answer(w));
    if (w < HISTORY_WINDOWS / 2) h.settle('x', end - 300_000, end, answer(w + 1));
  }
  return h.get('x')!;
}

interface Served {
  url: string;
  clock: FakeClock;
  /** Times the app read the status, and each account's history. */
  statusReads: () => number;
  historyReads: () => number;
  set(status: ExporterStatus): void;
  extraSecrets: string[];
}

async function serve(
  status: ExporterStatus,
  o: { maxScrapesInFlight?: number; hold?: (end: () => void) => void } = {},
): Promise<Served> {
  const clock = new FakeClock(T0);
  const history = fullHistory();
  let current = status;
  let statusReads = 0;
  let historyReads = 0;
  const extraSecrets: string[] = [];
  const app = exporterApp(silentLogger, {
    clock,
    status: () => {
      statusReads++;
      return current;
    },
    history: {
      get: () => {
        historyReads++;
        return history;
      },
    },
    secrets: () => extraSecrets,
    ...(o.maxScrapesInFlight ? { maxScrapesInFlight: o.maxScrapesInFlight } : {}),
  });
  const r = await listen((req, res) => {
    // A response the test holds: the app has written it, it is not over until the test says so.
    if (o.hold && req.headers['x-hold'] === '1') {
      const end = res.end.bind(res) as (...a: unknown[]) => typeof res;
      res.end = ((...args: unknown[]) => {
        o.hold!(() => end(...args));
        return res;
      }) as typeof res.end;
    }
    app(req, res);
  });
  running.push(r);
  return {
    url: r.url,
    clock,
    statusReads: () => statusReads,
    historyReads: () => historyReads,
    set: (s) => {
      current = s;
    },
    extraSecrets,
  };
}

async function html(url: string, headers: Record<string, string> = {}): Promise<string> {
  const res = await request(url, { headers });
  expect(res.status, res.body.toString().slice(0, 200)).toBe(200);
  return res.body.toString();
}

/** The accounts a page lists, once each, in its order. */
function names(page: string): string[] {
  return [...new Set(tableRows(page, 'accounts').map((r) => r[0]!.replace(/ \(discovered\)$/, '')))];
}

/** The accounts whose traffic cards (charts) are on the page. */
function charted(page: string): string[] {
  return [...page.matchAll(/<section class="acct" aria-label="traffic of ([^"]+)">/g)].map((m) => m[1]!);
}

function pagesLine(page: string): string {
  const at = page.indexOf('<p class="pages"');
  return pageText(page.slice(at, page.indexOf('</p>', at)));
}

function links(page: string): Record<string, string> {
  const at = page.indexOf('<p class="pages"');
  const line = page.slice(at, page.indexOf('</p>', at));
  return Object.fromEntries(
    [...line.matchAll(/<a href="([^"]*)"[^>]*>([^<]+)<\/a>/g)].map((m) => [
      m[2]!,
      m[1]!.replace(/&#38;/g, '&'),
    ]),
  );
}

describe('landing page size at any number of accounts', () => {
  for (const n of [1000, 10_000]) {
    it(`${n.toLocaleString('en-US')} accounts: one page of ${PAGE_ACCOUNTS} accounts charted, under ${PAGE_BOUND_BYTES / 1024} KB, the summary counting them all`, async () => {
      const status = fleet(n);
      const s = await serve(status);
      const res = await request(`${s.url}/?refresh=off`);
      expect(res.status).toBe(200);
      const page = res.body.toString();
      expect(res.body.length).toBeLessThan(PAGE_BOUND_BYTES);
      const shown = names(page);
      expect(shown).toHaveLength(PAGE_ACCOUNTS);
      // Charts for the page's accounts only: six per account whose traffic is polled.
      expect(charted(page)).toEqual(shown);
      expect(page.match(/<svg class="spark"/g)).toHaveLength(6 * PAGE_ACCOUNTS);
      const down = new Set(status.accounts.filter((a) => a.tried && !a.up).map((a) => a.name)).size;
      expect(pageText(page.slice(page.indexOf('<p class="summary"')))).toMatch(
        new RegExp(`^${n.toLocaleString('en-US')} accounts: ${down} down · `),
      );
      expect(pagesLine(page)).toMatch(
        new RegExp(
          `^Accounts 1–50 of ${n.toLocaleString('en-US')}, worst first .* page 1 of ${(n / PAGE_ACCOUNTS).toLocaleString('en-US')} · next · last$`,
        ),
      );
      // The problem tables hold the page's accounts' rows only, at most PROBLEM_ROWS, and say so.
      const dvr = tableRows(page, 'dvr problems');
      expect(dvr.length).toBeLessThanOrEqual(PROBLEM_ROWS);
      for (const row of dvr) expect(shown).toContain(row[0]);
      const ofPage = status.problems.dvr.filter((p) => shown.includes(p.account)).length;
      const note = `The accounts on this page only (${ofPage} of ${status.problems.dvr.length.toLocaleString('en-US')} in all)`;
      expect(page).toContain(
        ofPage > PROBLEM_ROWS
          ? `${note}; the first ${PROBLEM_ROWS} shown; /metrics (cdn_dvr_stream_alive, cdn_dvr_coverage_ratio, cdn_dvr_stream_up) has every one.`
          : `${note}.`,
      );
    });
  }

  it('a text longer than MAX_TEXT_CHARS is cut, so one answer cannot make a row grow without bound', () => {
    const status = fleet(3);
    status.accounts[0]!.lastError = `500: ${'x'.repeat(100_000)}`;
    const page = renderLanding(status, { now: T0, secrets: [] });
    const error = tableRows(page, 'accounts')[0]![7]!;
    expect(error.endsWith(`500: ${'x'.repeat(MAX_TEXT_CHARS - 5)}…`)).toBe(true);
    expect(page.length).toBeLessThan(
      renderLanding(fleet(3), { now: T0, secrets: [] }).length + MAX_TEXT_CHARS + 10,
    );
    // At the edge: MAX_TEXT_CHARS characters are shown whole, one more is cut (a character, not a UTF-16 unit).
    const edge = (text: string) => {
      status.accounts[0]!.lastError = text;
      return tableRows(renderLanding(status, { now: T0, secrets: [] }), 'accounts')[0]![7]!
        .split('\n')
        .at(-1);
    };
    const whole = '😀'.repeat(MAX_TEXT_CHARS);
    expect(edge(whole)).toBe(whole);
    expect(edge(`${whole}x`)).toBe(`${whole}…`);
  });

  it(`each problem table holds at most PROBLEM_ROWS (${PROBLEM_ROWS}) rows, and says when there are more`, () => {
    const status = fleet(1);
    const rows = (n: number): DvrProblem[] =>
      Array.from({ length: n }, (_, i) => ({
        account: nameOf(0),
        stream: `s${i}`,
        host: 'h',
        problem: 'not alive',
      }));
    status.problems.dvr = rows(PROBLEM_ROWS);
    let page = renderLanding(status, { now: T0, secrets: [] });
    expect(tableRows(page, 'dvr problems')).toHaveLength(PROBLEM_ROWS);
    expect(page).not.toContain('has every one');
    status.problems.dvr = rows(PROBLEM_ROWS + 1);
    page = renderLanding(status, { now: T0, secrets: [] });
    expect(tableRows(page, 'dvr problems').map((r) => r[1])).toEqual(rows(PROBLEM_ROWS).map((r) => r.stream));
    expect(page).toContain(
      `the first ${PROBLEM_ROWS} shown; /metrics (cdn_dvr_stream_alive, cdn_dvr_coverage_ratio, cdn_dvr_stream_up) has every one.`,
    );
  });
});

describe('landing page order: the worst accounts first', () => {
  const ago = (s: number) => new Date(T0 - s * 1000);
  const up = (name: string, s: number): AccountStatus => ({
    name,
    api: 'metrics',
    up: true,
    tried: true,
    lastSuccess: ago(s),
  });

  it('down, then failing, then with problems listed, then pending, then up; the longest since a success first', () => {
    const status: ExporterStatus = {
      ready: false,
      version: '0.1.0',
      startedAt: ago(7200),
      accounts: [
        up('zeta', 10),
        up('alpha', 5),
        up('omega', 300),
        { name: 'beta', api: 'metrics', up: false, tried: true, lastSuccess: ago(3600), lastError: '500' },
        { name: 'gamma', api: 'metrics', up: false, tried: true, lastError: '401: token refused' },
        up('delta', 1),
        {
          name: 'delta',
          api: 'dvr-net',
          up: true,
          tried: true,
          lastSuccess: ago(1),
          errorsSinceSuccess: 2,
          lastError: 'x',
        },
        up('epsilon', 2),
        { name: 'kappa', api: 'recorder-cloud', up: false, tried: false },
        up('iota', 20),
      ],
      problems: {
        dvr: [{ account: 'epsilon', stream: 'live/main', host: 'h1', problem: 'not alive' }],
        recordings: [],
      },
    };
    const page = renderLanding(status, { now: T0, secrets: [] });
    // gamma never succeeded: the longest since a success of the down accounts.
    expect(names(page)).toEqual([
      'gamma',
      'beta',
      'delta',
      'epsilon',
      'kappa',
      'omega',
      'iota',
      'zeta',
      'alpha',
    ]);
    expect(
      pageText(
        page.slice(
          page.indexOf('<p class="summary"'),
          page.indexOf('</p>', page.indexOf('<p class="summary"')),
        ),
      ),
    ).toBe(
      '9 accounts: 2 down · 1 failing · 1 with problems listed · 1 pending · 4 up · DVR streams with problems: 1 · ' +
        'recordings with problems: 0 · accounts with series refused: 0',
    );
  });

  it('walking every page lists every account once, each no better than the one after it (property)', () => {
    const STATES = ['down', 'failing', 'pending', 'up', 'problems'] as const;
    const RANK = { down: 0, failing: 1, problems: 2, pending: 3, up: 4 };
    fc.assert(
      fc.property(
        fc.array(fc.record({ state: fc.constantFrom(...STATES), stale: fc.integer({ min: 0, max: 5000 }) }), {
          maxLength: 3 * PAGE_ACCOUNTS + 7,
        }),
        (specs) => {
          const accounts: AccountStatus[] = [];
          const dvr: DvrProblem[] = [];
          specs.forEach((spec, i) => {
            const name = `a${i}`;
            const lastSuccess = ago(spec.stale);
            if (spec.state === 'pending') accounts.push({ name, api: 'metrics', up: false, tried: false });
            else if (spec.state === 'down')
              accounts.push({ name, api: 'metrics', up: false, tried: true, lastSuccess });
            else
              accounts.push({
                name,
                api: 'metrics',
                up: true,
                tried: true,
                lastSuccess,
                ...(spec.state === 'failing' ? { errorsSinceSuccess: 1 } : {}),
              });
            if (spec.state === 'problems') dvr.push({ account: name, stream: 's', problem: 'not alive' });
          });
          const status: ExporterStatus = {
            ready: true,
            version: 'x',
            startedAt: ago(9000),
            accounts,
            problems: { dvr, recordings: [] },
          };
          const seen: string[] = [];
          const pages = Math.max(1, Math.ceil(specs.length / PAGE_ACCOUNTS));
          for (let p = 1; p <= pages; p++) {
            const shown = names(renderLanding(status, { now: T0, secrets: [], page: p }));
            expect(shown.length).toBe(Math.min(PAGE_ACCOUNTS, specs.length - (p - 1) * PAGE_ACCOUNTS));
            seen.push(...shown);
          }
          expect([...seen].sort()).toEqual(specs.map((_, i) => `a${i}`).sort());
          const key = (name: string) => {
            const spec = specs[Number(name.slice(1))]!;
            return { rank: RANK[spec.state], stale: spec.state === 'pending' ? Infinity : spec.stale };
          };
          for (let i = 1; i < seen.length; i++) {
            const a = key(seen[i - 1]!);
            const b = key(seen[i]!);
            expect(
              a.rank < b.rank || (a.rank === b.rank && a.stale >= b.stale),
              `${seen[i - 1]} before ${seen[i]}`,
            ).toBe(true);
          }
        },
      ),
      { numRuns: 40 },
    );
  });
});

describe('landing page paging and search', () => {
  it(`pages of ${PAGE_ACCOUNTS} accounts with first, previous, next and last links; past the end, the last page`, async () => {
    const s = await serve(fleet(1000));
    const first = await html(`${s.url}/`);
    expect(links(first)).toEqual({ next: '?page=2', last: '?page=20' });
    const second = await html(`${s.url}/?page=2`);
    expect(pagesLine(second)).toMatch(
      /^Accounts 51–100 of 1,000, .* · first · previous · page 2 of 20 · next · last$/,
    );
    expect(links(second)).toEqual({ first: '?', previous: '?', next: '?page=3', last: '?page=20' });
    expect(names(second).filter((n) => names(first).includes(n))).toEqual([]);
    // Reloading keeps the page: the meta refresh reloads this URL; the refresh switch keeps the page too.
    expect(second).toContain('<a href="?page=2&#38;refresh=off">stop reloading</a>');
    // Following "next" from the first page reaches every account once, in 20 pages.
    const seen: string[] = [];
    let url = '?';
    for (let i = 0; i < 25 && url; i++) {
      const page = await html(`${s.url}/${url}`);
      seen.push(...names(page));
      url = links(page).next ?? '';
    }
    expect(seen).toHaveLength(1000);
    expect(new Set(seen).size).toBe(1000);
    const last = await html(`${s.url}/?page=20`);
    expect(links(last)).toEqual({ first: '?', previous: '?page=19' });
    // A stale link past the end shows the last page.
    expect(names(await html(`${s.url}/?page=999999999`))).toEqual(names(last));
    for (const bad of ['0', '-1', '1.5', 'two', '1e3', '1234567890', '1&page=2']) {
      const res = await request(`${s.url}/?page=${bad}`);
      expect(res.status, bad).toBe(400);
      expect(res.body.toString(), bad).toMatch(/^bad request: page /);
    }
  });

  it('finds accounts by a part of their name, in any case, escaped, within MAX_SEARCH_CHARS', async () => {
    const status = fleet(1000);
    const hostile = 'acme"><script>alert(1)</script>';
    for (const name of ['acme-prod', 'ACME-staging', hostile])
      status.accounts.push({ name, api: 'metrics', up: true, tried: true, lastSuccess: new Date(T0) });
    const s = await serve(status);
    const found = await html(`${s.url}/?q=Acme`);
    expect(names(found).sort()).toEqual(['ACME-staging', 'acme-prod', hostile].sort());
    expect(pagesLine(found)).toMatch(
      /^Accounts 1–3 of 3 whose name contains “Acme” \(1,003 in all\), worst first/,
    );
    expect(found).not.toContain('<script>');
    expect(found).toContain('value="Acme"');
    expect(found).toContain('<a href="?refresh=off">every account</a>'.replace('?refresh=off', '?'));
    // Only the matches are charted.
    expect(charted(found).length).toBe(3);

    // What the search echoes is escaped, in the box and in every link.
    const evil = '"><script>x</script>&';
    const echoed = await html(`${s.url}/?q=${encodeURIComponent(evil)}&refresh=off`);
    expect(echoed).not.toContain('<script>x');
    expect(echoed).toContain('value="&#34;&#62;&#60;script&#62;x&#60;/script&#62;&#38;"');
    expect(echoed).toContain('<input type="hidden" name="refresh" value="off">');
    expect(pagesLine(echoed)).toBe(
      `No account name contains “${evil}”, worst first (down, failing, with problems, pending, up; then the longest since a success)`,
    );

    // Paging keeps the search.
    const many = await html(`${s.url}/?q=account-00&page=2`);
    expect(links(many).next).toBe('?q=account-00&page=3');
    expect(names(many).every((n) => n.startsWith('account-00'))).toBe(true);

    expect((await request(`${s.url}/?q=${'x'.repeat(MAX_SEARCH_CHARS)}`)).status).toBe(200);
    const long = await request(`${s.url}/?q=${'x'.repeat(MAX_SEARCH_CHARS + 1)}`);
    expect(long.status).toBe(400);
    expect(long.body.toString()).toBe(
      `bad request: q (the search) is longer than ${MAX_SEARCH_CHARS} characters\n`,
    );
    expect((await request(`${s.url}/?q=a&q=b`)).status).toBe(400);
  });
});

describe('landing page cache and gzip', () => {
  it(`renders a page once per ${PAGE_TTL_MS} ms whatever the requests: the status read once for every page of that moment`, async () => {
    const status = fleet(200);
    const s = await serve(status);
    const one = await html(`${s.url}/`);
    expect(s.statusReads()).toBe(1);
    const charts = s.historyReads();
    expect(charts).toBe(PAGE_ACCOUNTS);
    // Nothing changed, same moment: the same bytes, neither the status nor a history read again.
    expect(await html(`${s.url}/`)).toBe(one);
    expect([s.statusReads(), s.historyReads()]).toEqual([1, charts]);
    // Another page of the same moment reads its own accounts' histories, not the status.
    await html(`${s.url}/?page=2`);
    expect([s.statusReads(), s.historyReads()]).toEqual([1, 2 * charts]);
    // An account page of that moment too.
    expect((await request(`${s.url}/accounts/${nameOf(7)}`)).status).toBe(200);
    expect((await request(`${s.url}/accounts/nobody`)).status).toBe(404);
    expect(s.statusReads()).toBe(1);

    // A change within the lifetime is shown from the next one on (the page says "as of" when it was made).
    const changed = fleet(200);
    changed.accounts = changed.accounts.map((a) =>
      a.name === nameOf(150) ? { ...a, up: false, lastError: 'newly down', errorsSinceSuccess: 1 } : a,
    );
    s.set(changed);
    await s.clock.advance(PAGE_TTL_MS - 1);
    expect(await html(`${s.url}/`)).toBe(one);
    await s.clock.advance(1);
    const next = await html(`${s.url}/`);
    expect(s.statusReads()).toBe(2);
    // Down now: among the first accounts, where it was not before.
    expect(names(one)).not.toContain(nameOf(150));
    expect(names(next).slice(0, 4)).toContain(nameOf(150));
    const row = tableRows(next, 'accounts').find((r) => r[0] === nameOf(150) && r[1] === 'metrics')!;
    expect(row[2]).toBe('down');
    expect(row[7]).toBe('1× since the last success\nnewly down');
  });

  it(`keeps the ${CACHED_PAGES} pages last asked for, the least recently used dropped first`, async () => {
    const s = await serve(fleet(1000));
    const ask = async (page: number): Promise<number> => {
      const before = s.historyReads();
      await html(`${s.url}/?page=${page}`);
      return s.historyReads() - before;
    };
    // Each page made reads its accounts' histories; a kept one reads none.
    for (let p = 1; p <= CACHED_PAGES; p++) expect(await ask(p)).toBe(PAGE_ACCOUNTS);
    expect(await ask(1)).toBe(0);
    // One more page: page 2, now the least recently used, goes; page 1 stays.
    expect(await ask(CACHED_PAGES + 1)).toBe(PAGE_ACCOUNTS);
    expect(await ask(1)).toBe(0);
    expect(await ask(2)).toBe(PAGE_ACCOUNTS);
    expect(s.statusReads()).toBe(1);
  });

  it('a secret given after a page was made is masked from the next request on', async () => {
    const status = fleet(3);
    status.accounts[0]!.lastError = '401: token tok-abcdef123456 refused';
    const s = await serve(status);
    expect(await html(`${s.url}/`)).toContain('tok-abcdef123456');
    s.extraSecrets.push('tok-abcdef123456');
    const again = await html(`${s.url}/`);
    expect(again).not.toContain('tok-abcdef123456');
    expect(again).toContain('&#60;redacted&#62;');
    expect(s.statusReads()).toBe(1);
  });

  it('is served gzipped to a client that accepts it, the same page', async () => {
    const s = await serve(fleet(1000));
    for (const path of ['/', `/accounts/${nameOf(3)}`]) {
      const plain = await request(`${s.url}${path}`);
      const gz = await request(`${s.url}${path}`, { headers: { 'accept-encoding': 'gzip, deflate, br' } });
      expect(plain.headers['content-encoding']).toBeUndefined();
      expect(gz.headers['content-encoding']).toBe('gzip');
      expect(gz.headers.vary).toBe('Accept-Encoding');
      expect(Number(gz.headers['content-length'])).toBe(gz.body.length);
      expect(gunzipSync(gz.body).equals(plain.body)).toBe(true);
      expect(gz.body.length).toBeLessThan(plain.body.length / 4);
    }
    const refused = await request(`${s.url}/`, { headers: { 'accept-encoding': 'gzip;q=0' } });
    expect(refused.headers['content-encoding']).toBeUndefined();
  });
});

describe('landing page concurrency cap', () => {
  it('past server.max_scrapes_in_flight page responses at once, a page request gets 503 at once; /metrics keeps its own', async () => {
    const held: Array<() => void> = [];
    const s = await serve(fleet(100), { maxScrapesInFlight: 2, hold: (end) => held.push(end) });
    const hold = { 'x-hold': '1' };
    // Two responses written and not over: one of each page kind, both under the one cap.
    const pending = [
      request(`${s.url}/`, { headers: hold }),
      request(`${s.url}/accounts/${nameOf(4)}`, { headers: hold }),
    ];
    await waitFor(() => held.length === 2, 10_000, 'two page responses held');
    for (const path of ['/', '/?page=2', `/accounts/${nameOf(5)}`]) {
      const res = await request(`${s.url}${path}`);
      expect(res.status, path).toBe(503);
      expect(res.headers['retry-after']).toBe('1');
      expect(res.body.toString()).toBe(
        'too many page requests in flight (server.max_scrapes_in_flight is 2)\n',
      );
    }
    expect((await request(`${s.url}/metrics`)).status).toBe(200);
    expect((await request(`${s.url}/healthz`)).status).toBe(200);
    for (const end of held.splice(0)) end();
    for (const res of await Promise.all(pending)) expect(res.status).toBe(200);
    expect((await request(`${s.url}/`)).status).toBe(200);
  });
});
