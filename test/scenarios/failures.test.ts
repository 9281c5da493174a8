/**
 * The failure table (docs/metrics.md, "When the API fails"), end to end: the real exporter against the simulator on loopback, real
 * clock, small backoffs. Each test asserts what a user sees on /metrics, on the landing page, on /readyz and in the
 * logs, and checks the counters against the simulator's exact truth and its request log.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { floorMinute, MINUTE } from '../../src/clock.js';
import {
  answeredWindows,
  cursorOf,
  expectExact,
  expectTiles,
  metricsRequests,
  type Range,
  reader,
  windowOf,
} from '../helpers/ground-truth.js';
import { captureLog } from '../helpers/log-capture.js';
import { perTest } from '../helpers/per-test.js';
import { minuteSafeNow, type Stack, waitFor } from '../helpers/stack.js';
import { json, startTamperProxy } from '../helpers/tamper-proxy.js';

const CATCH_UP = { delay: '0m', window: '5m' };
const MINUTE_PRECISION = 'Invalid time format. Time must be at minute precision';

const started = perTest();

/** Catch-up is over once the cursor is within one steady-state window (5 m) and a minute of now. */
function caughtUp(cursor: number): boolean {
  return cursor >= floorMinute(Date.now()) - 6 * MINUTE;
}

function up(scrape: Awaited<ReturnType<Stack['scrape']>>, account: string): number | undefined {
  return scrape.value('cdn_up', { api: 'metrics', account });
}

function windowSeconds(scrape: Awaited<ReturnType<Stack['scrape']>>, account: string): number | undefined {
  return scrape.value('cdn_metrics_window_seconds', { account });
}

const minutes = ([a, b]: Range) => (b - a) / MINUTE;

/** Waits until `account` is up and caught up; a scrape taken after. */
async function upAndCaughtUp(s: Stack, account: string, timeoutMs: number, what: string) {
  await waitFor(
    async () => {
      const scrape = await s.scrape();
      return up(scrape, account) === 1 && caughtUp(cursorOf(scrape, account));
    },
    timeoutMs,
    what,
  );
  return s.scrape();
}

/** The landing page's row of `account`'s traffic poll, as HTML. */
function metricsRow(page: string, account: string): string | undefined {
  return page.split('\n').find((l) => l.startsWith(`<tr><td>${account}</td><td>metrics</td>`));
}

describe('504: execution timeout', () => {
  it('halves the window, asks for the same minutes in shorter windows, grows back to 10 m and stays exact', async () => {
    const sim = await started.simulator({ seed: 7, slowMs: 300 });
    sim.timeoutWindowsLongerThan(2);
    const first = floorMinute((await minuteSafeNow()) - 6 * 60 * MINUTE);
    const s = await started.stack({ simulator: sim, config: { metrics: { lookback: '6h', ...CATCH_UP } } });

    // While the API times out above 2 minutes, /metrics shows the smaller window.
    const seen = new Set<number>();
    await waitFor(
      async () => {
        const scrape = await s.scrape();
        const w = windowSeconds(scrape, 'demo');
        if (w !== undefined) seen.add(w);
        return cursorOf(scrape, 'demo') >= first + 60 * MINUTE;
      },
      15_000,
      'an hour counted in small windows',
    );
    // It oscillates between 2 and 4 minutes: 3 successes double it, the next 504 halves it again.
    expect(windowSeconds(await s.scrape(), 'demo')).toBeLessThanOrEqual(4 * 60);
    expect(Math.min(...seen)).toBeLessThanOrEqual(4 * 60);
    const mark = sim.requestLog.length;
    sim.clearWindowRules();

    // Before the API recovered, no window above 2 minutes was ever answered.
    const whileTimingOut = sim.requestLog
      .slice(0, mark)
      .filter((e) => e.api === 'metrics' && e.status === 200)
      .map(windowOf);
    expect(whileTimingOut.length).toBeGreaterThan(20);
    expect(Math.max(...whileTimingOut.map(minutes))).toBe(2);

    await waitFor(
      async () => {
        const scrape = await s.scrape();
        return caughtUp(cursorOf(scrape, 'demo')) && windowSeconds(scrape, 'demo') === 600;
      },
      15_000,
      'catch-up in 10-minute windows again',
    );
    const scrape = await s.scrape();
    const cursor = cursorOf(scrape, 'demo');
    const log = metricsRequests(sim, 'demo');

    // The request log: every 504 was a window above 2 minutes, and its minutes were then answered in shorter
    // windows that tile it exactly.
    const timeouts = log.filter((e) => e.status === 504);
    expect(timeouts.length).toBeGreaterThan(0);
    expect(timeouts[0]!.window).toEqual([first, first + 10 * MINUTE]);
    const answered = answeredWindows(sim, 'demo');
    for (const t of timeouts) {
      const [a, b] = t.window;
      expect(minutes(t.window)).toBeGreaterThan(2);
      const inside = answered.filter(([s0, e0]) => s0 >= a && e0 <= b);
      expectTiles(inside, a, b, `the minutes of the 504 window ${new Date(a).toISOString()}`);
      expect(Math.max(...inside.map(minutes))).toBeLessThanOrEqual(minutes(t.window) / 2);
    }
    // Once the API answers again, successes grow the window back: 10-minute windows are answered again.
    const ten = answered.filter((w) => minutes(w) === 10 && w[0] > first + 60 * MINUTE);
    expect(ten.length).toBeGreaterThan(0);

    // Exactly once, all the same.
    const counted = answered.filter(([, e]) => e <= cursor);
    expectTiles(counted, first, cursor, 'answered windows');
    expect(scrape.value('cdn_metrics_windows_total', { account: 'demo' })).toBe(counted.length);
    expect(expectExact(sim, reader(scrape), 'demo', [[first, cursor]])).toBeGreaterThan(100);
    expect(scrape.value('cdn_api_requests_total', { api: 'metrics', code: '504' })).toBe(timeouts.length);
    expect(up(scrape, 'demo')).toBe(1);
  }, 40_000);
});

describe('422: a rejected window', () => {
  it('counts the rejected minutes as skipped, asks for them once, goes on and stays exact elsewhere', async () => {
    const sim = await started.simulator({ seed: 7, slowMs: 300 });
    const first0 = floorMinute((await minuteSafeNow()) - 6 * 60 * MINUTE);
    // Catch-up asks 10-minute windows from the first start: each range holds exactly one window start even if
    // the exporter's first minute is one later than ours.
    sim.rejectWindows(first0 + 25 * MINUTE, first0 + 35 * MINUTE);
    sim.rejectWindows(
      first0 + 125 * MINUTE,
      first0 + 135 * MINUTE,
      'Statistics for this period are unavailable',
    );
    const { log, lines } = captureLog();
    const s = await started.stack({
      simulator: sim,
      config: { metrics: { lookback: '6h', ...CATCH_UP } },
      exporter: { log },
    });
    await waitFor(async () => caughtUp(cursorOf(await s.scrape(), 'demo')), 15_000, 'catch-up');
    const scrape = await s.scrape();
    const cursor = cursorOf(scrape, 'demo');

    const requests = metricsRequests(sim, 'demo');
    const first = Math.min(...requests.map((e) => e.window[0]));
    expect(first - first0).toBeLessThanOrEqual(MINUTE);
    const rejected = requests.filter((e) => e.status === 422).map((e) => e.window);
    expect(rejected).toEqual([
      [first + 30 * MINUTE, first + 40 * MINUTE],
      [first + 130 * MINUTE, first + 140 * MINUTE],
    ]);
    // Passed, not retried: each rejected window was asked for once.
    for (const [a, b] of rejected) {
      expect(requests.filter((e) => e.window[0] === a && e.window[1] === b)).toHaveLength(1);
    }
    expect(scrape.value('cdn_metrics_skipped_seconds_total', { account: 'demo', reason: 'rejected' })).toBe(
      2 * 10 * 60,
    );

    // The walker went on: answered and rejected windows together tile the whole range, and every counter is the
    // truth minus the skipped minutes.
    const answered = answeredWindows(sim, 'demo', cursor);
    expectTiles(
      [...answered, ...rejected].sort((x, y) => x[0] - y[0]),
      first,
      cursor,
      'answered and rejected',
    );
    expect(scrape.value('cdn_metrics_windows_total', { account: 'demo' })).toBe(answered.length);
    const [r1, r2] = rejected as [Range, Range];
    expectExact(sim, reader(scrape), 'demo', [
      [first, r1[0]],
      [r1[1], r2[0]],
      [r2[1], cursor],
    ]);
    // The traffic of the skipped minutes is really missing (the check above could not pass with it counted).
    expect(sim.truth('demo', '1003', r1[0], r1[1]).edge.requests).toBeGreaterThan(0);
    // A rejection is not an outage: the API answered.
    expect(up(scrape, 'demo')).toBe(1);

    // The API's own description is logged, once per rejected window.
    const warned = lines.filter((l) => l.includes('"level":40') && l.includes('"account":"demo"'));
    expect(warned.filter((l) => l.includes(MINUTE_PRECISION))).toHaveLength(1);
    expect(warned.filter((l) => l.includes('Statistics for this period are unavailable'))).toHaveLength(1);
  }, 30_000);
});

describe('401/403: a refused token', () => {
  it('marks only that account down, without the token anywhere, and picks up a corrected token file', async () => {
    const sim = await started.simulator({ seed: 7, slowMs: 300 });
    const dir = started.folder('cdn-failures-');
    const tokenFile = join(dir, 'acme-token');
    const wrong = 'acme-wrong-token-5f1e';
    writeFileSync(tokenFile, `${wrong}\n`);
    const { log, lines } = captureLog();
    const first = floorMinute((await minuteSafeNow()) - 60 * MINUTE);
    const s = await started.stack({
      simulator: sim,
      config: {
        metrics: { lookback: '1h', ...CATCH_UP },
        accounts: [{ name: 'demo' }, { name: 'acme', token_file: tokenFile }],
      },
      exporter: { log },
    });
    await waitFor(
      async () => {
        const scrape = await s.scrape();
        return caughtUp(cursorOf(scrape, 'demo')) && up(scrape, 'acme') === 0;
      },
      15_000,
      'demo caught up, acme refused',
    );
    // Let acme probe a few times while refused.
    await waitFor(
      () => metricsRequests(sim, 'acme').filter((e) => e.status === 403).length >= 3,
      10_000,
      'three refused probes',
    );
    const secrets = [wrong, 'acme-token', 'demo-token'];
    const down = await s.scrape();
    expect(up(down, 'acme')).toBe(0);
    expect(up(down, 'demo')).toBe(1);
    expect(cursorOf(down, 'acme')).toBe(0);
    const demoCursor = cursorOf(down, 'demo');
    expect(expectExact(sim, reader(down), 'demo', [[first, demoCursor]])).toBeGreaterThan(50);

    const page = await (await fetch(`${s.url}/`)).text();
    const acmeRow = metricsRow(page, 'acme');
    expect(acmeRow).toContain('class="down"');
    // The last error, with when it happened and how often since the last success (never, here).
    expect(acmeRow).toMatch(
      /class="err"><span class="small">\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ .*\d+× since the last success<\/span><br>403: [^<]*Invalid token/,
    );
    const demoRow = metricsRow(page, 'demo');
    expect(demoRow).toContain('class="up"');
    const metricsText = await s.text();
    for (const secret of secrets) {
      expect(page).not.toContain(secret);
      expect(metricsText).not.toContain(secret);
      expect(lines.join('\n')).not.toContain(secret);
    }
    // Logged once per change, not once per probe.
    const refusedLines = lines.filter(
      (l) => l.includes('"level":40') && l.includes('"account":"acme"') && l.includes('403'),
    );
    expect(refusedLines).toHaveLength(1);

    // The operator fixes the file: the exporter reads it again after the next refusal and catches up.
    writeFileSync(tokenFile, 'acme-token\n');
    const back = await upAndCaughtUp(s, 'acme', 10_000, 'acme back up and caught up');
    const acmeCursor = cursorOf(back, 'acme');
    // Exact from the first start: the refused windows were retried, not skipped.
    const acmeRequests = metricsRequests(sim, 'acme');
    expect(acmeRequests[0]!.window[0]).toBe(first);
    expectTiles(answeredWindows(sim, 'acme', acmeCursor), first, acmeCursor, 'acme windows');
    expect(expectExact(sim, reader(back), 'acme', [[first, acmeCursor]])).toBeGreaterThan(50);
    expect(back.value('cdn_metrics_skipped_seconds_total', { account: 'acme', reason: 'rejected' })).toBe(0);
    // The page is a copy of at most a second ago (docs/operations.md, "The landing page"): it shows acme up soon.
    let pageBack = '';
    await waitFor(
      async () => {
        pageBack = await (await fetch(`${s.url}/`)).text();
        return metricsRow(pageBack, 'acme')?.includes('class="up"') === true;
      },
      10_000,
      'the landing page showing acme up',
    );
    for (const secret of secrets) expect(pageBack + lines.join('\n')).not.toContain(secret);
  }, 30_000);
  it('survives a token rotated by the CDN in the middle of catch-up, with no minute lost or counted twice', async () => {
    const sim = await started.simulator({ seed: 7, slowMs: 300 });
    const dir = started.folder('cdn-failures-');
    const tokenFile = join(dir, 'acme-token');
    writeFileSync(tokenFile, 'acme-token\n');
    const first = floorMinute((await minuteSafeNow()) - 6 * 60 * MINUTE);
    const s = await started.stack({
      simulator: sim,
      config: {
        api: { requests_per_second: 10 },
        metrics: { lookback: '6h', ...CATCH_UP },
        accounts: [{ name: 'acme', token_file: tokenFile }],
      },
    });
    await waitFor(async () => cursorOf(await s.scrape(), 'acme') >= first + 60 * MINUTE, 10_000, 'an hour');
    sim.setToken('acme', 'acme-token-2026');
    await waitFor(async () => up(await s.scrape(), 'acme') === 0, 5_000, 'acme refused');
    const stalled = cursorOf(await s.scrape(), 'acme');
    expect(caughtUp(stalled)).toBe(false);
    writeFileSync(tokenFile, 'acme-token-2026\n');
    const scrape = await upAndCaughtUp(s, 'acme', 15_000, 'acme caught up with the new token');
    const cursor = cursorOf(scrape, 'acme');
    expect(cursor).toBeGreaterThan(stalled);
    const answered = answeredWindows(sim, 'acme', cursor);
    expectTiles(answered, first, cursor, 'acme windows');
    expect(metricsRequests(sim, 'acme').some((e) => e.status === 403)).toBe(true);
    expect(scrape.value('cdn_metrics_windows_total', { account: 'acme' })).toBe(answered.length);
    expectExact(sim, reader(scrape), 'acme', [[first, cursor]]);
  }, 30_000);
});

describe('a hung API', () => {
  it('never slows a scrape: /metrics, /readyz and /healthz answer while the first poll hangs', async () => {
    // Every API request is answered only after 60 s, and the exporter waits up to 30 s for it: the first poll is
    // still in flight when the answers below come back, however loaded the machine (checked after them).
    const sim = await started.simulator({ seed: 7, slowMs: 60_000, faults: { slow: 1 } });
    const s = await started.stack({
      simulator: sim,
      config: { api: { timeout: '30s' }, metrics: { lookback: '30m', ...CATCH_UP } },
    });
    await sim.requestArrived((e) => e.api === 'metrics');

    const metrics = await fetch(`${s.url}/metrics`);
    expect(metrics.status).toBe(200);
    expect(await metrics.text()).toContain('cdn_exporter_build_info');
    // Not ready while the first poll has neither an answer nor a timeout.
    const ready = await fetch(`${s.url}/readyz`);
    expect(ready.status).toBe(503);
    expect(await ready.text()).toContain('demo/metrics');
    expect((await fetch(`${s.url}/healthz`)).status).toBe(200);
    for (let i = 0; i < 5; i++) expect((await fetch(`${s.url}/metrics`)).status).toBe(200);
    const hung = await s.scrape();
    // All of that was answered while the poll was in flight: no answer at the simulator, none given up on.
    const asked = metricsRequests(sim, 'demo');
    expect(asked.length).toBeGreaterThan(0);
    expect(asked.filter((e) => e.status !== 0)).toEqual([]);
    expect(hung.value('cdn_api_requests_total', { api: 'metrics', code: 'error' }) ?? 0).toBe(0);
    expect(cursorOf(hung, 'demo')).toBe(0);
  });

  it('/readyz waits for the first answer or timeout, then the exporter recovers exactly', async () => {
    // Every API request is answered only after 20 s; the exporter gives up after 1 s.
    const sim = await started.simulator({ seed: 7, slowMs: 20_000, faults: { slow: 1 } });
    const first = floorMinute((await minuteSafeNow()) - 30 * MINUTE);
    const s = await started.stack({
      simulator: sim,
      config: { api: { timeout: '1s' }, metrics: { lookback: '30m', ...CATCH_UP } },
    });
    await sim.requestArrived((e) => e.api === 'metrics');

    // After the timeout the first poll has been tried: ready (the process works; cdn_up tells the API is down).
    await waitFor(
      async () => (await fetch(`${s.url}/readyz`)).status === 200,
      20_000,
      'ready after the timeout',
    );
    for (let i = 0; i < 5; i++) expect((await fetch(`${s.url}/metrics`)).status).toBe(200);
    const hung = await s.scrape();
    expect(up(hung, 'demo')).toBe(0);
    expect(cursorOf(hung, 'demo')).toBe(0);
    expect(hung.value('cdn_api_requests_total', { api: 'metrics', code: 'error' })).toBeGreaterThan(0);
    const page = await (await fetch(`${s.url}/`)).text();
    expect(metricsRow(page, 'demo')).toContain('class="down"');

    // The API answers again: nothing was lost while it hung.
    sim.setFaults({});
    const scrape = await upAndCaughtUp(s, 'demo', 20_000, 'recovered and caught up');
    const cursor = cursorOf(scrape, 'demo');
    expect(expectExact(sim, reader(scrape), 'demo', [[first, cursor]])).toBeGreaterThan(50);
    expect((await fetch(`${s.url}/readyz`)).status).toBe(200);
  }, 45_000);
});

describe('a body trickled a byte at a time', () => {
  it('is cut off at api.timeout (headers and body together), sets cdn_up 0, and the exporter recovers exactly', async () => {
    // Headers at once, then one byte every 50 ms: never idle long enough for a per-chunk timeout.
    const sim = await started.simulator({ seed: 7, trickleMs: 50, faults: { trickle: 1 } });
    const first = floorMinute((await minuteSafeNow()) - 30 * MINUTE);
    const s = await started.stack({
      simulator: sim,
      config: { api: { timeout: '1s' }, metrics: { lookback: '30m', ...CATCH_UP } },
    });
    await waitFor(
      async () => up(await s.scrape(), 'demo') === 0,
      5_000,
      'cdn_up 0 once the first trickled answer misses its deadline',
    );
    const stuck = await s.scrape();
    expect(cursorOf(stuck, 'demo')).toBe(0);
    expect(stuck.value('cdn_api_requests_total', { api: 'metrics', code: 'error' })).toBeGreaterThan(0);
    const page = await (await fetch(`${s.url}/`)).text();
    const row = metricsRow(page, 'demo');
    expect(row).toContain('class="down"');
    expect(row).toContain('whole answer not received within 1000ms');

    sim.setFaults({});
    const scrape = await upAndCaughtUp(s, 'demo', 15_000, 'recovered and caught up');
    expect(expectExact(sim, reader(scrape), 'demo', [[first, cursorOf(scrape, 'demo')]])).toBeGreaterThan(50);
  }, 30_000);
});

describe('gzip-compressed answers', () => {
  it('are asked for, decoded and counted exactly, with no parse error', async () => {
    const sim = await started.simulator({ seed: 7, gzip: true });
    const first = floorMinute((await minuteSafeNow()) - 30 * MINUTE);
    const s = await started.stack({ simulator: sim, config: { metrics: { lookback: '30m', ...CATCH_UP } } });
    const scrape = await upAndCaughtUp(s, 'demo', 15_000, 'caught up through gzip answers');
    const answered = metricsRequests(sim, 'demo').filter((e) => e.status === 200);
    expect(answered.length).toBeGreaterThan(0);
    expect(answered.every((e) => e.encoding === 'gzip')).toBe(true);
    expect(scrape.value('cdn_exporter_parse_errors_total', { api: 'metrics' }) ?? 0).toBe(0);
    expect(expectExact(sim, reader(scrape), 'demo', [[first, cursorOf(scrape, 'demo')]])).toBeGreaterThan(50);
  }, 30_000);
});

describe('a traffic answer for another request', () => {
  it('is refused as a parse error, its window asked for again, and the totals stay exact', async () => {
    const sim = await started.simulator({ seed: 7 });
    const proxy = await startTamperProxy(sim.url);
    let stack: Stack | undefined;
    try {
      // The first three answers echo another start, end and account in turn.
      const lies: Array<Record<string, string>> = [
        { start: '2000-01-01T00:00:00' },
        { end: '2000-01-01T00:05:00' },
        { account: 'someone-else' },
      ];
      proxy.tamper = (req, up) => {
        if (!req.path.startsWith('/app/metrics/v1') || up.status !== 200 || lies.length === 0)
          return undefined;
        return json({ ...(JSON.parse(up.body) as object), ...lies.shift() });
      };
      const first = floorMinute((await minuteSafeNow()) - 30 * MINUTE);
      stack = await started.stack({
        simulator: sim,
        config: { api: { base_url: proxy.url }, metrics: { lookback: '30m', ...CATCH_UP } },
      });
      const s = stack;
      const scrape = await upAndCaughtUp(s, 'demo', 15_000, 'caught up past the answers for other requests');
      expect(proxy.rewritten).toBe(3);
      expect(scrape.value('cdn_exporter_parse_errors_total', { api: 'metrics' })).toBe(3);
      expect(scrape.all('cdn_edge_requests_total', { account: 'someone-else' })).toHaveLength(0);
      expect(expectExact(sim, reader(scrape), 'demo', [[first, cursorOf(scrape, 'demo')]])).toBeGreaterThan(
        50,
      );
    } finally {
      // The exporter stops before the proxy it asks through closes.
      await stack?.stop();
      await proxy.close();
    }
  }, 30_000);
});

describe('an answer over api.max_body_bytes', () => {
  it('is an error of its own kind: counted as a parse error, cdn_up 0, shorter windows asked for', async () => {
    const simulator = await started.simulator({ seed: 7 });
    const s = await started.stack({
      simulator,
      config: { api: { max_body_bytes: '1KiB' }, metrics: { lookback: '30m', ...CATCH_UP } },
    });
    // The gauge shows the window planned; the simulator logs a request once it arrived: wait for both.
    await waitFor(
      async () =>
        windowSeconds(await s.scrape(), 'demo') === 60 &&
        metricsRequests(simulator, 'demo').some((e) => minutes(e.window) === 1),
      10_000,
      'the window shrunk to 1 minute after answers too large to read, and a 1-minute window asked for',
    );
    const scrape = await s.scrape();
    expect(up(scrape, 'demo')).toBe(0);
    expect(cursorOf(scrape, 'demo')).toBe(0);
    expect(scrape.value('cdn_exporter_parse_errors_total', { api: 'metrics' })).toBeGreaterThanOrEqual(4);
    const page = await (await fetch(`${s.url}/`)).text();
    expect(metricsRow(page, 'demo')).toContain('more than 1024 bytes (api.max_body_bytes)');
    // Shorter windows were asked for: 10, then 5, 2 and 1 minute.
    const lengths = new Set(metricsRequests(simulator, 'demo').map((e) => minutes(e.window)));
    expect([...lengths].sort((a, b) => a - b)).toEqual([1, 2, 5, 10]);
  }, 30_000);
});
