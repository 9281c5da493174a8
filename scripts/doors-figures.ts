/**
 * The figures of issue 25's table ("now"), one line per row: the newer doors (login, inventory, basic auth) tried
 * as a hostile upstream or client would. Run from the sources, bundled (it uses the tests' fake clock):
 *   npx rolldown scripts/doors-figures.ts --platform node --format esm -o /tmp/doors-figures.mjs \
 *     && node /tmp/doors-figures.mjs [row...]
 * from the repository's root, after `npm run build` (rows 7-9 use the built answer worker).
 * Times are wall milliseconds on this machine (busy machines give larger ones); memory is the growth of this
 * process's resident set. Loopback only; every server started is stopped.
 */
import { spawn } from 'node:child_process';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import bcrypt from 'bcryptjs';
import { LoginToken } from '../src/auth/login-token.js';
import { loadConfig } from '../src/config/index.js';
import type { AccountPollers } from '../src/exporter/account-pollers.js';
import { Exporter } from '../src/exporter/exporter.js';
import { parseJsonBody } from '../src/http/parse.js';
import { createLogger, silentLogger } from '../src/log.js';
import { closeServer } from '../src/main.js';
import { SECRETS } from '../src/redact.js';
import type { HostileLogin } from '../src/simulator/auth.js';
import { type Simulator, startSimulator } from '../src/simulator/server.js';
import { DEMO_PASSWORD, DEMO_USER } from '../src/simulator/world.js';
import { AuthCache, workerCompare } from '../src/web/auth.js';
import { scrapeAs, startAliceServer } from '../test/helpers/basic-auth-server.js';
import { FakeClock } from '../test/helpers/fake-clock.js';
import { inventoryBody } from '../test/helpers/inventory.js';
import { runLogin } from '../test/helpers/login-token.js';
import { serveExporter } from '../test/helpers/stack.js';

const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(0)} MB`;
const rss = () => process.memoryUsage().rss;

async function withSim<T>(clock: FakeClock | undefined, fn: (sim: Simulator) => Promise<T>): Promise<T> {
  const sim = await startSimulator({ seed: 7, ...(clock ? { clock } : {}) });
  try {
    return await fn(sim);
  } finally {
    await sim.close();
  }
}

/** The demo user's login token against `sim`; `timeoutMs` as api.timeout, its default when absent. */
function demoToken(sim: Simulator, clock: FakeClock, timeoutMs?: number): LoginToken {
  return new LoginToken({
    credential: { username: DEMO_USER, password: DEMO_PASSWORD },
    baseUrl: sim.url,
    clock,
    log: silentLogger,
    timeoutMs,
  });
}

/** One login against a hostile simulator; the outcome, its time and the RSS growth. */
async function loginOnce(hostile: HostileLogin, timeoutMs = 30_000) {
  const clock = new FakeClock();
  return withSim(clock, async (sim) => {
    sim.hostileLogin(hostile);
    const token = demoToken(sim, clock, timeoutMs);
    const before = rss();
    const t0 = performance.now();
    const stop = await runLogin(token);
    const ms = performance.now() - t0;
    const grown = rss() - before;
    await stop();
    return { status: token.status, ms, grown, sim, clock, token };
  });
}

/** The demo user's token kept for `minutes` of the fake clock, one second a step (each login done first). */
async function keepToken(sim: Simulator, clock: FakeClock, minutes: number): Promise<void> {
  const token = demoToken(sim, clock);
  const stop = await runLogin(token);
  for (let i = 0; i < minutes * 60; i++) {
    while (token.busy) await new Promise((r) => setTimeout(r, 1));
    await clock.advance(1000);
  }
  await stop();
}

async function row1(): Promise<string> {
  const before = SECRETS.size;
  const a = await loginOnce({ kind: 'fields', token: 'A'.repeat(10_000_000) });
  const b = await loginOnce({ kind: 'fields', token: 'B'.repeat(1_000_000) });
  const c = await loginOnce({ kind: 'fields', token: 'C'.repeat(60_000) });
  // Renewals: the registry keeps the live token only.
  const clock = new FakeClock();
  const kept = await withSim(clock, async (sim) => {
    sim.setTokenLifetime(2 * 60_000);
    await keepToken(sim, clock, 20);
    return {
      issued: sim.issuedTokens().length,
      live: sim.issuedTokens().filter((t) => SECRETS.has(t)).length,
    };
  });
  return [
    `10 MB token: ${a.status.state} "${a.status.detail}" in ${a.ms.toFixed(0)} ms, +${mb(a.grown)} RSS`,
    `1 MB token: ${b.status.state} in ${b.ms.toFixed(0)} ms, +${mb(b.grown)}`,
    `60 kB token: ${c.status.state} "${c.status.detail}" in ${c.ms.toFixed(0)} ms`,
    `secret registry +${SECRETS.size - before} (the password, the live token); after ${kept.issued} logins in 20 min: ${kept.live} token registered`,
  ].join('; ');
}

async function row2(): Promise<string> {
  const out: string[] = [];
  for (const lifetime of [1e16, 1e300, '99999999999999999']) {
    const r = await loginOnce({ kind: 'fields', lifetime });
    const days = ((r.status.expiresAt ?? 0) - r.clock.now()) / 86_400_000;
    out.push(`${lifetime}: ${r.status.state}, expires in ${days} d`);
  }
  return out.join('; ');
}

async function row3(): Promise<string> {
  const r = await loginOnce({ kind: 'trickle', everyMs: 1000 }, 2000);
  return `trickled answer, api.timeout 2s: ${r.status.state} "${r.status.detail}" after ${r.ms.toFixed(0)} ms`;
}

async function row4(): Promise<string> {
  const r = await loginOnce({ kind: 'endless' });
  return `endless answer: ${r.status.state} "${r.status.detail}" after ${r.ms.toFixed(0)} ms, +${mb(r.grown)} RSS`;
}

async function row5(): Promise<string> {
  const r = await loginOnce({ kind: 'fields', token: 'cdn1_ABC\r\nX-Evil: 1\u0000' });
  return `CR/LF/NUL token: ${r.status.state} "${r.status.detail}"; next attempt after 20 min (REFUSED_RETRY_MS)`;
}

async function row6(): Promise<string> {
  const clock = new FakeClock();
  return withSim(clock, async (sim) => {
    sim.hostileLogin({ kind: 'fields', lifetime: 1 });
    await keepToken(sim, clock, 60);
    return `lifetime 1 ms: ${sim.logins.length} logins in 60 simulated minutes (${(sim.logins.length / 60).toFixed(2)}/min)`;
  });
}

/** An exporter (fake clock: no polling but discovery's) whose inventory answers `body`. */
async function discovering(body: string, discovery: Record<string, unknown> = {}) {
  const clock = new FakeClock(Date.UTC(2026, 6, 1));
  const sim = await startSimulator({ seed: 7, clock });
  sim.setInventoryBody(body);
  const file = {
    api: { base_url: sim.url, username: DEMO_USER, password: DEMO_PASSWORD, requests_per_second: 50 },
    metrics: { lookback: '10m', delay: '0m', window: '5m' },
    accounts_discovery: { enabled: true, interval: '10m', ...discovery },
    accounts: [],
  };
  const text = JSON.stringify(file);
  const logged: string[] = [];
  const log = createLogger({
    destination: {
      write: (l: string) => {
        logged.push(l);
        return true;
      },
    } as unknown as NodeJS.WritableStream,
  });
  const exporter = new Exporter({
    config: loadConfig({ file: 'bench.yml', env: {}, readFile: () => text }),
    log,
    version: 'bench',
    clock,
    defaultMetrics: false,
    // The built worker (this script runs bundled, away from dist/): big answers are parsed off the loop, as in
    // production. Run `npm run build` first.
    answerParser: { workerUrl: new URL('dist/src/offloop/worker.js', `file://${process.cwd()}/`) },
  });
  const { server, url } = await serveExporter(exporter);
  const pollers = () => (exporter as unknown as { pollers?: AccountPollers }).pollers;
  return {
    exporter,
    url,
    logged,
    pollers,
    stop: async () => {
      await exporter.stop(2000);
      await closeServer(server, 500);
      await sim.close();
    },
  };
}

async function row7(): Promise<string> {
  const names = Array.from({ length: 100_000 }, (_, i) => `acct-${String(i).padStart(6, '0')}`);
  const before = rss();
  const delay = monitorEventLoopDelay({ resolution: 5 });
  const d = await discovering(inventoryBody(names));
  delay.enable();
  const t0 = performance.now();
  await d.exporter.start();
  while ((d.pollers()?.size ?? 0) < 10_000) await new Promise((r) => setTimeout(r, 20));
  const startMs = performance.now() - t0;
  delay.disable();
  const health = performance.now();
  await fetch(`${d.url}/healthz`);
  const healthMs = performance.now() - health;
  const grown = rss() - before;
  const s0 = performance.now();
  await d.stop();
  const stopMs = performance.now() - s0;
  return (
    `100,000 listed: 10,000 started in ${startMs.toFixed(0)} ms (${((10_000 / startMs) * 1000).toFixed(0)}/s), ` +
    `longest event-loop stall ${(delay.max / 1e6).toFixed(0)} ms, /healthz ${healthMs.toFixed(0)} ms, +${mb(grown)} RSS, ` +
    `stop ${stopMs.toFixed(0)} ms (the tests' fake clock drops each aborted sleep in O(N): production timers do not)`
  );
}

async function row8(): Promise<string> {
  const long = Array.from({ length: 5000 }, (_, i) => `${String(i).padStart(5, '0')}${'x'.repeat(10_000)}`);
  const d = await discovering(inventoryBody([...long, 'fine']));
  await d.exporter.start();
  while ((d.pollers()?.size ?? 0) < 1) await new Promise((r) => setTimeout(r, 20));
  await d.exporter.store.refresh();
  const metrics = await (await fetch(`${d.url}/metrics`)).text();
  const page = await (await fetch(`${d.url}/`)).text();
  const logBytes = d.logged.reduce((n, l) => n + l.length, 0);
  const longest = Math.max(...d.logged.map((l) => l.length));
  await d.stop();
  return `5,000 names of 10 kB: /metrics ${metrics.length} B, landing page ${page.length} B, log ${logBytes} B (longest line ${longest} B)`;
}

async function row9(): Promise<string> {
  const d = await discovering(inventoryBody(['..', '.', 'demo']), { recordings: true });
  await d.exporter.start();
  while ((d.pollers()?.size ?? 0) < 1) await new Promise((r) => setTimeout(r, 20));
  await d.exporter.store.refresh();
  const metrics = await (await fetch(`${d.url}/metrics`)).text();
  const refused = /cdn_discovered_accounts_refused\{reason="name_invalid"\} (\d+)/.exec(metrics)?.[1];
  await d.stop();
  return `names . and ..: refused ${refused} (name_invalid), polled ${d.pollers()?.size ?? 0} (demo)`;
}

async function row10(): Promise<string> {
  const out: string[] = [];
  for (const size of [10_000_000, 50_000_000]) {
    const bytes = Buffer.alloc(size, 0x5b);
    const before = rss();
    const t0 = performance.now();
    let what = '';
    try {
      parseJsonBody('inventory', bytes);
    } catch (err) {
      what = (err as { detail?: string }).detail ?? String(err);
    }
    out.push(
      `${size / 1e6} MB of [: "${what}" in ${(performance.now() - t0).toFixed(0)} ms, +${mb(rss() - before)} RSS`,
    );
  }
  return out.join('; ');
}

async function row11(): Promise<string> {
  // The built bcrypt worker (this script runs bundled, away from dist/).
  const compare = workerCompare({
    url: new URL('dist/src/web/bcrypt-worker.js', `file://${process.cwd()}/`),
  });
  const cache = new AuthCache({ compare });
  const served = await startAliceServer(cache, bcrypt.hashSync('right', 10));
  const url = served.url;
  await scrapeAs(url, 'alice', 'right', 1);
  // The 200 guessing clients run in a process of their own, as they would: their CPU is not the server's.
  const guessers = spawn(
    process.execPath,
    [
      '-e',
      `const http = require('node:http');
      let n = 0;
      const one = (i) => {
        const req = http.request(process.argv[1] + '/metrics', { agent: false, localAddress: '127.0.' + Math.floor((i + 2) / 250) + '.' + (((i + 2) % 250) + 1),
          headers: { authorization: 'Basic ' + Buffer.from('guesser-' + i + ':guess-' + n++).toString('base64') } },
          (res) => { res.resume(); res.on('end', () => one(i)); });
        req.on('error', () => setTimeout(() => one(i), 10));
        req.end();
      };
      for (let i = 0; i < 200; i++) one(i);`,
      url,
    ],
    { stdio: 'ignore' },
  );
  const times: number[] = [];
  const until = performance.now() + 15_000;
  while (performance.now() < until) {
    const t0 = performance.now();
    const s = await scrapeAs(url, 'alice', 'right', 1);
    if (s !== 200) throw new Error(`legitimate scrape answered ${s}`);
    times.push(performance.now() - t0);
    await new Promise((r) => setTimeout(r, 500));
  }
  guessers.kill();
  await served.close();
  times.sort((a, b) => a - b);
  const median = times[Math.floor(times.length / 2)]!;
  return (
    `200 guessing clients, 15 s: legitimate scrape median ${median.toFixed(0)} ms, max ${times.at(-1)!.toFixed(0)} ms ` +
    `(${times.length} scrapes, all 200); bcrypt runs ${cache.bcryptRuns}`
  );
}

const ROWS: Record<string, () => Promise<string>> = {
  1: row1,
  2: row2,
  3: row3,
  4: row4,
  5: row5,
  6: row6,
  7: row7,
  8: row8,
  9: row9,
  10: row10,
  11: row11,
};

const wanted = process.argv.slice(2);
for (const [row, run] of Object.entries(ROWS)) {
  if (wanted.length > 0 && !wanted.includes(row)) continue;
  console.log(`row ${row}: ${await run()}`);
}
process.exit(0);
