/**
 * The cap on an account's `dvr_streams` (issue 33, row 7): a round polls each stream once, one request each, so an
 * account may list at most `api.requests_per_second` x `dvr.interval` streams (docs/configuration.md); more are
 * refused at start with the key and the numbers named. The largest accepted list runs: it starts, answers, and
 * stops on SIGTERM (400,000 streams, accepted before, held a core at 100 % and outlived SIGTERM).
 */
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { dvrStreamsCap } from '../../src/config/cross-check.js';
import { ConfigError, formatIssue, loadConfig } from '../../src/config/index.js';
import {
  cliTestFolder,
  EXIT_WAIT_MS,
  exitWithin,
  runCli,
  servingUrl,
  startCli,
} from '../helpers/cli-process.js';
import { Scrape } from '../helpers/exposition.js';
import { waitFor } from '../helpers/stack.js';

const dir = cliTestFolder('cli-dvr-cap-');

function configText(baseUrl: string, streams: readonly string[], api = '', dvr = ''): string {
  return [
    'api:',
    `  base_url: ${baseUrl}`,
    '  token: cap-test-token',
    ...(api ? [`  ${api}`] : []),
    ...(dvr ? ['dvr:', `  ${dvr}`] : []),
    'accounts:',
    '  - name: acme',
    '    dvr_streams:',
    ...streams.map((s) => `      - ${s}`),
    '',
  ].join('\n');
}

/** The formatted issues of a configuration, none when it loads. */
function issues(text: string): string[] {
  try {
    loadConfig({ file: 'cdn.yaml', env: {}, readFile: () => text });
    return [];
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return (e as ConfigError).issues.map(formatIssue);
  }
}

const names = (n: number) => Array.from({ length: n }, (_, i) => `live/stream-${i}`);

/** A loopback port nothing listens on: bound, then closed (connections to it are refused). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('dvr_streams cap', () => {
  it('at the defaults (5 requests a second, dvr.interval 1m) is 300 streams: 300 load, 301 are refused with the numbers', () => {
    expect(issues(configText('https://api.cdn.example', names(300)))).toEqual([]);
    expect(issues(configText('https://api.cdn.example', names(301)))).toEqual([
      'accounts[0].dvr_streams: must list at most 300 streams, got 301: a round polls each stream once, and at ' +
        'most 300 requests fit in dvr.interval (1m) at api.requests_per_second (5); raise one of them (if the ' +
        'CDN allows that rate), or list fewer streams',
    ]);
  });

  it('follows both keys, counts a repeated name once, and takes a decimal rate at its written value', () => {
    const url = 'https://api.cdn.example';
    expect(issues(configText(url, names(600), 'requests_per_second: 10'))).toEqual([]);
    expect(issues(configText(url, names(601), 'requests_per_second: 10'))).toHaveLength(1);
    expect(issues(configText(url, names(600), '', 'interval: 2m'))).toEqual([]);
    expect(issues(configText(url, names(601), '', 'interval: 2m'))[0]).toMatch(
      /^accounts\[0\]\.dvr_streams: must list at most 600 streams, got 601: .* dvr\.interval \(2m\) at api\.requests_per_second \(5\)/,
    );
    // The schema keeps one of each name: 300 distinct streams written 400 times are 300.
    expect(issues(configText(url, [...names(300), ...names(100)]))).toEqual([]);
    // 0.29 x 100 is 28.999999999999996 in binary: the cap is the 29 the user's numbers say.
    expect(dvrStreamsCap(0.29, 100_000)).toBe(29);
    expect(issues(configText(url, names(29), 'requests_per_second: 0.29', 'interval: 100s'))).toEqual([]);
    expect(issues(configText(url, names(30), 'requests_per_second: 0.29', 'interval: 100s'))).toHaveLength(1);
    // A rate that cannot poll one stream per interval refuses any.
    expect(dvrStreamsCap(0.5, 1000)).toBe(0);
  });

  it('the largest list accepted (100,000 streams at 1000 a second every 100s) starts with the API unreachable, answers, polls, and stops on SIGTERM; one more stream is refused with exit 2', async () => {
    const url = `http://127.0.0.1:${await closedPort()}`;
    const api = 'requests_per_second: 1000';
    const dvr = 'interval: 100s';
    const largest = join(dir, 'largest.yml');
    writeFileSync(largest, configText(url, names(100_000), api, dvr));
    const over = join(dir, 'over.yml');
    writeFileSync(over, configText(url, names(100_001), api, dvr));

    for (const command of ['check-config', 'run']) {
      const refused = await runCli(
        [command, '--config', over, '--web.listen-address', '127.0.0.1:0'],
        {},
        60_000,
      );
      expect(refused.code, command).toBe(2);
      expect(refused.stderr, command).toContain(
        'accounts[0].dvr_streams: must list at most 100000 streams, got 100001: a round polls each stream once, ' +
          'and at most 100000 requests fit in dvr.interval (1m40s) at api.requests_per_second (1000)',
      );
    }

    const p = startCli(['run', '--config', largest, '--web.listen-address', '127.0.0.1:0']);
    const base = await servingUrl(p, 60_000);
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    // The round is under way: the first streams' failures are on /metrics while the others wait their turn.
    await waitFor(
      async () =>
        (await Scrape.from(base)).value('cdn_dvr_stream_up', { account: 'acme', stream: 'live/stream-0' }) ===
        0,
      30_000,
      'the first stream polled',
    );
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    p.child.kill('SIGTERM');
    const exit = await exitWithin(p, EXIT_WAIT_MS);
    expect(exit, `still running ${EXIT_WAIT_MS} ms after SIGTERM`).toEqual({ code: 0, signal: null });
  }, 240_000);
});
