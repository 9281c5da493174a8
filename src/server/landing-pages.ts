/**
 * The landing page and the account pages as the app serves them (issue 33): each rendered at most once per
 * PAGE_TTL_MS, kept (at most CACHED_PAGES) and gzipped on demand, and the query a page is asked with. The pages
 * themselves are rendered by ./landing.ts and ./traffic-page.ts.
 */
import { gzipSync } from 'node:zlib';
import type { Clock } from '../clock.js';
import { redactSecrets, SECRETS } from '../redact.js';
import {
  CACHED_PAGES,
  type LandingOverview,
  type LandingView,
  landingOverview,
  MAX_SEARCH_CHARS,
  PAGE_TTL_MS,
  renderAccountPage,
  renderLandingView,
} from './landing.js';
import type { ExporterStatus } from './status.js';
import type { HistorySource } from './traffic-page.js';
/** A rendered page as it is sent: its bytes, and the same gzipped (made on the first request that accepts gzip). */
export interface RenderedPage {
  body: Buffer;
  gzip(): Buffer;
}

export interface LandingPagesDeps {
  /** The status snapshot (the app's `status()`): read once per PAGE_TTL_MS at most, whatever the requests. */
  status: () => ExporterStatus;
  /** Each account's traffic history; absent: no traffic shown, no account page. */
  history?: HistorySource;
  clock: Clock;
  /** Secrets to mask besides those registered in src/redact.ts (the app's `secrets`). */
  secrets: () => string[];
}

interface Kept {
  page: RenderedPage;
}

function renderedPage(html: string): RenderedPage {
  const body = Buffer.from(html);
  let gz: Buffer | undefined;
  return { body, gzip: () => (gz ??= gzipSync(body)) };
}

/**
 * The landing page and the account pages, each rendered at most once per PAGE_TTL_MS (per page, search and
 * refresh setting): a request within it is served the bytes already made, so twenty browsers reloading the page
 * cost one render a second, not twenty. The status is read once per PAGE_TTL_MS for every page of that moment
 * (the ranking of every account is the costly part at 10,000 accounts); then each page renders only its own
 * accounts. At most CACHED_PAGES pages are kept. Why a lifetime rather than invalidation on change: with
 * thousands of accounts some poll changes the status every second (10,000 accounts on a 1-minute interval: about
 * 170 changes a second), and neither the status board nor the history has a change count to read cheaply, so a
 * copy kept until the next change would hardly ever be served where it matters.
 *
 * A page is redacted as it is rendered; a secret registered since (src/redact.ts SECRETS, or one more in
 * `secrets`) drops every kept page.
 */
export class LandingPages {
  private overview: LandingOverview | undefined;
  private readonly pages = new Map<string, Kept>();
  private secretsSeen: { size: number; extra: string[] } = { size: -1, extra: [] };

  constructor(private readonly deps: LandingPagesDeps) {}

  /** The landing page of `view`. Throws what `status()` throws. */
  landing(view: LandingView & { refresh: boolean }): RenderedPage {
    const q = view.q ?? '';
    const key = `landing\u0000${view.refresh ? 1 : 0}\u0000${view.page ?? 1}\u0000${q}`;
    return this.cached(key, (ov, secrets) =>
      renderLandingView(ov, {
        now: ov.now,
        secrets,
        refresh: view.refresh,
        page: view.page,
        q,
        ...(this.deps.history ? { history: this.deps.history } : {}),
      }),
    );
  }

  /** `/accounts/<name>`; undefined when the account's traffic is not polled (or no history is kept). */
  account(name: string): RenderedPage | undefined {
    const history = this.deps.history;
    if (!history || !this.current().traffic.has(name)) return undefined;
    return this.cached(`account\u0000${name}`, (ov, secrets) =>
      renderAccountPage(name, { now: ov.now, secrets, history }),
    );
  }

  private current(): LandingOverview {
    const now = this.deps.clock.now();
    const ov = this.overview;
    // A clock gone back (a system clock set back) makes the copy stale too.
    if (ov && now >= ov.now && now - ov.now < PAGE_TTL_MS) return ov;
    this.pages.clear();
    const next = landingOverview(this.deps.status(), now);
    this.overview = next;
    return next;
  }

  private cached(key: string, render: (ov: LandingOverview, secrets: string[]) => string): RenderedPage {
    const secrets = this.deps.secrets();
    const seen = this.secretsSeen;
    if (
      seen.size !== SECRETS.size ||
      seen.extra.length !== secrets.length ||
      seen.extra.some((s, i) => s !== secrets[i])
    ) {
      this.pages.clear();
      this.secretsSeen = { size: SECRETS.size, extra: secrets };
    }
    const ov = this.current();
    const kept = this.pages.get(key);
    if (kept) {
      // Most recently used last: the first key is the one to drop.
      this.pages.delete(key);
      this.pages.set(key, kept);
      return kept.page;
    }
    // Each dynamic string was redacted before escaping; the whole page once more, as it leaves.
    const page = renderedPage(redactSecrets(render(ov, secrets), secrets, 'page'));
    if (this.pages.size >= CACHED_PAGES) this.pages.delete(this.pages.keys().next().value!);
    this.pages.set(key, { page });
    return page;
  }
}

/** What a request's query asks of the landing page, or why it cannot be read (the 400's text). */
export function landingQuery(
  query: Record<string, unknown>,
): { view: LandingView & { refresh: boolean } } | { error: string } {
  const once = (key: string): string | undefined | { error: string } => {
    const v = query[key];
    if (v === undefined || typeof v === 'string') return v;
    return { error: `${key} given more than once` };
  };
  const refresh = once('refresh');
  const page = once('page');
  const q = once('q');
  for (const v of [refresh, page, q]) if (typeof v === 'object') return v;
  let pageNumber = 1;
  if (typeof page === 'string' && page !== '') {
    // Past the last page is the last page; a number too long to be a page is refused with the rest.
    if (!/^[1-9][0-9]{0,8}$/.test(page)) return { error: 'page must be a whole number from 1' };
    pageNumber = Number(page);
  }
  const search = typeof q === 'string' ? q.trim() : '';
  if (Array.from(search).length > MAX_SEARCH_CHARS)
    return { error: `q (the search) is longer than ${MAX_SEARCH_CHARS} characters` };
  return { view: { refresh: refresh !== 'off', page: pageNumber, q: search } };
}
