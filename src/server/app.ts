/**
 * The exporter's HTTP app (docs/architecture.md; docs/operations.md, "Endpoints"). It reads only what the pollers already stored: the
 * prom-client registry, the series store's cached exposition and a synchronous status snapshot. No handler waits
 * on a poll, so a slow or failing CDN API never makes a scrape or a probe slow. Listening, signals and shutdown
 * belong to the caller.
 *
 * Routes: GET|HEAD /metrics, /healthz, /readyz, / (`?page=`, `?q=`, `?refresh=off`; a bad one 400), /accounts/<name>
 * (an account whose traffic is polled; else 404); other methods on them 405; other paths 404; a parameter with a
 * malformed percent-escape 400.
 */
import express, { type Express, type NextFunction, type Request, type Response } from 'express';
import type { Registry } from 'prom-client';
import { type Clock, systemClock } from '../clock.js';
import type { Logger } from '../log.js';
import { redactSecrets } from '../redact.js';
import type { CountedCursors, Exposition } from '../store/types.js';
import { assertDistinctFamilies, duplicateFamilies, renderMetrics } from './exposition.js';
import { LandingPages, landingQuery, type RenderedPage } from './landing-pages.js';
import { DEFAULT_SERVER_LIMITS, scrapeGate } from './limits.js';
import { acceptsGzip, CONTENT_TYPES, negotiateFormat } from './negotiate.js';
import { type ExporterStatus, notReadyReason } from './status.js';
import type { HistorySource } from './traffic-page.js';

export { redactSecrets } from '../redact.js';
export type { AccountStatus, DvrProblem, ExporterStatus, RecordingProblem } from './status.js';

export interface AppDeps {
  /** The exporter's own registry (self metrics and process defaults), never prom-client's global one. */
  registry: Registry;
  /** The series store's exposition: the CDN data families. */
  store: Exposition;
  /** A snapshot for the landing page and /readyz; must return at once. */
  status: () => ExporterStatus;
  /** Each account's traffic history for the landing page (src/server/traffic-history.ts); absent: none shown. */
  history?: { get: HistorySource };
  log: Logger;
  /**
   * Makes the counted cursors of the exposition about to be served durable (the state file); /metrics sends its
   * bytes only once this resolves. Must not reject (a failed save is the callee's to log and count).
   */
  beforeServe?: (counted: CountedCursors) => Promise<void>;
  /**
   * Secrets to register before the app redacts what it shows (src/redact.ts). The exporter passes none: its token
   * sources and logins register every token and password as they read or receive it.
   */
  secrets?: () => Iterable<string>;
  clock?: Clock;
  /**
   * /metrics responses being written at most; more get 503 (default 100, server.max_scrapes_in_flight). The HTML
   * pages (/ and /accounts/<name>) have as many of their own, counted apart.
   */
  maxScrapesInFlight?: number;
}

const TEXT = 'text/plain; charset=utf-8';
const ALLOW = 'GET, HEAD';

function sendText(res: Response, status: number, body: string): void {
  res.status(status).set('Content-Type', TEXT).set('Cache-Control', 'no-store').send(body);
}

/** A response dropped without its 'close' (it should not happen): its store buffers go back, left to the GC. */
const dropped = new FinalizationRegistry<(written: boolean) => void>((release) => release(false));

/**
 * Calls `release` once the response is over. `written` only for an HTTP/1 response that finished: its last
 * write's callback has run, so the kernel has every byte and nothing outside JavaScript reads the buffers. An
 * HTTP/2 stream's 'finish' comes with its close, cut off or not, so it never counts as written.
 */
function releaseWhenOver(req: Request, res: Response, release: (written: boolean) => void): void {
  if (res.destroyed) {
    release(false);
    return;
  }
  const http1 = req.httpVersionMajor < 2;
  let finished = false;
  res.once('finish', () => {
    finished = true;
  });
  res.once('close', () => {
    dropped.unregister(res);
    release(http1 && finished);
  });
  dropped.register(res, release, res);
}

/**
 * Builds the app. Throws when a metric family is both in the registry and in the store (Prometheus would reject
 * the page); families added later are checked at each scrape and logged once.
 */
export function createApp(deps: AppDeps): Express {
  const { registry, store, log } = deps;
  const clock = deps.clock ?? systemClock;
  /** The registry's counters count from here: their created timestamp (made with the registry, at startup). */
  const startedMs = clock.now();
  const secrets = (): string[] => [...(deps.secrets?.() ?? [])];
  assertDistinctFamilies(registry, store);
  let reportedDuplicates = '';

  const app = express();
  app.disable('x-powered-by');
  // Paths are matched exactly: `/METRICS` and `/metrics/` are not `/metrics` (express matches both by default),
  // so what a proxy or the web config's open paths (src/web) see is what the app serves.
  app.set('case sensitive routing', true);
  app.set('strict routing', true);
  // ETags would hash every (large) /metrics body; nothing here is worth revalidating.
  app.set('etag', false);

  const methodNotAllowed = (_req: Request, res: Response): void => {
    res.set('Allow', ALLOW);
    sendText(res, 405, 'method not allowed\n');
  };

  app
    .route('/metrics')
    .get(scrapeGate(deps.maxScrapesInFlight ?? DEFAULT_SERVER_LIMITS.maxScrapesInFlight))
    .get(async (req: Request, res: Response) => {
      const dups = duplicateFamilies(registry, store).join(', ');
      if (dups && dups !== reportedDuplicates)
        log.error({ families: dups }, 'metric families registered twice');
      reportedDuplicates = dups;

      const format = negotiateFormat(req);
      const gzip = acceptsGzip(req);
      const body = await renderMetrics(registry, store, format, gzip, startedMs);
      releaseWhenOver(req, res, body.release);
      const counted = body.counted;
      // A HEAD sends no counts: it must not mark them as seen.
      if (counted && deps.beforeServe && req.method !== 'HEAD') await deps.beforeServe(counted);
      res.status(200);
      res.set('Content-Type', CONTENT_TYPES[format]);
      res.set('Cache-Control', 'no-store');
      res.set('Vary', 'Accept, Accept-Encoding');
      if (gzip) res.set('Content-Encoding', 'gzip');
      res.set('Content-Length', String(body.length));
      // HEAD: Node's response drops the body and keeps the headers, Content-Length included. The chunks are
      // the store's cached buffers: corked, they go out in one writev and are referenced, not copied.
      res.cork();
      for (const chunk of body.chunks) res.write(chunk);
      res.end();
      res.uncork();
    })
    .all(methodNotAllowed);

  app
    .route('/healthz')
    .get((_req, res) => sendText(res, 200, 'ok\n'))
    .all(methodNotAllowed);

  app
    .route('/readyz')
    .get((_req, res) => {
      const status = deps.status();
      if (status.ready) sendText(res, 200, 'ready\n');
      else sendText(res, 503, `${redactSecrets(notReadyReason(status), secrets(), 'page')}\n`);
    })
    .all(methodNotAllowed);

  const history: HistorySource | undefined = deps.history
    ? (account) => deps.history!.get(account)
    : undefined;
  // Rendered (and redacted) at most once a second, served from their bytes in between (./landing.ts).
  const pages = new LandingPages({ status: deps.status, ...(history ? { history } : {}), clock, secrets });
  const pageGate = scrapeGate(
    deps.maxScrapesInFlight ?? DEFAULT_SERVER_LIMITS.maxScrapesInFlight,
    'page requests',
  );
  const sendPage = (req: Request, res: Response, page: RenderedPage): void => {
    const gzip = acceptsGzip(req);
    const body = gzip ? page.gzip() : page.body;
    res.status(200);
    res.set('Content-Type', 'text/html; charset=utf-8');
    res.set('Cache-Control', 'no-store');
    res.set('Vary', 'Accept-Encoding');
    if (gzip) res.set('Content-Encoding', 'gzip');
    res.set('Content-Length', String(body.length));
    res.end(body);
  };

  app
    .route('/')
    .get(pageGate)
    .get((req, res) => {
      const asked = landingQuery(req.query);
      if ('error' in asked) sendText(res, 400, `bad request: ${asked.error}\n`);
      else sendPage(req, res, pages.landing(asked.view));
    })
    .all(methodNotAllowed);

  app
    .route('/accounts/:name')
    .get(pageGate)
    .get((req, res) => {
      const page = pages.account(String(req.params.name));
      if (page) sendPage(req, res, page);
      else sendText(res, 404, 'no such account\n');
    })
    .all(methodNotAllowed);

  app.use((_req: Request, res: Response) => sendText(res, 404, 'not found\n'));

  // Express needs the four-argument signature to recognise an error handler.
  app.use((err: unknown, req: Request, res: Response, _next: NextFunction) => {
    // express's router decodes route parameters (`/accounts/:name`) with decodeURIComponent and passes its
    // URIError on (`%`, `%ZZ`, a cut-off or overlong UTF-8 sequence): the client's mistake, so 400 and a debug
    // line, never an error line an unauthenticated client could repeat at will.
    if (err instanceof URIError) {
      log.debug({ path: redactSecrets(req.path, secrets()) }, 'malformed percent-escape in the path');
      if (res.headersSent) res.destroy();
      else sendText(res, 400, 'bad request: malformed percent-escape in the path\n');
      return;
    }
    const message = redactSecrets(err instanceof Error ? err.message : String(err), secrets());
    log.error({ path: req.path, err: message }, 'request failed');
    if (res.headersSent) {
      res.destroy();
      return;
    }
    sendText(res, 500, 'internal error\n');
  });

  return app;
}
