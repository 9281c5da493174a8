/**
 * `cdn-exporter simulate` and `cdn-exporter demo` as processes: the simulator on port 0 answers the curl its own
 * log line suggests (GET /app/metrics/v1/resources with the demo token) as the metrics API document describes;
 * bad simulator flags exit 2 naming the flag; the demo serves cdn_ metrics at once; both stop with exit 0 on SIGTERM.
 */
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { exitWithin, killAll, requireBuild, runCli, servingUrl, startCli } from '../helpers/cli-process.js';
import { Scrape } from '../helpers/exposition.js';
import { waitFor } from '../helpers/stack.js';

beforeAll(requireBuild);
afterEach(killAll);

interface ResourcesAnswer {
  start: string;
  end: string;
  account: string;
  metrics: string[];
  data: Array<Record<string, unknown>>;
}

describe('simulate', () => {
  it('--port 0 serves the suggested curl: a 5-minute window by resource for the demo account', async () => {
    const p = startCli(['simulate', '--port', '0', '--seed', '42']);
    const line = await p.logLine((l) => typeof l.url === 'string');
    const url = String(line.url);
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:[1-9]\d*$/);
    // The log line's own suggestion: curl -H 'CDN-AUTH-TOKEN: <token>' '<url>'.
    const curl = /curl -H '([^:]+): ([^']+)' '([^']+)'/.exec(String(line.msg));
    expect(curl, String(line.msg)).not.toBeNull();
    const [, header, token, target] = curl!;
    expect(header).toBe('CDN-AUTH-TOKEN');
    expect(target!.startsWith(`${url}/app/metrics/v1/resources?`)).toBe(true);

    const res = await fetch(target!, { headers: { [header!]: token! } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    const body = (await res.json()) as ResourcesAnswer;
    const asked = new URL(target!).searchParams;
    expect(body.account).toBe(asked.get('account'));
    expect(body.start).toBe(asked.get('start'));
    expect(body.end).toBe(asked.get('end'));
    expect(body.data.length).toBeGreaterThan(0);
    for (const row of body.data) {
      expect(typeof row.resource).toBe('string');
      expect(typeof row.resource_name).toBe('string');
      expect(typeof row.cname).toBe('string');
      expect(typeof row.edge_requests_total).toBe('number');
    }
    expect(body.metrics).toContain('edge_status_200');

    // Without the token: 403 with the documented JSON description.
    const refused = await fetch(target!);
    expect(refused.status).toBe(403);
    expect(typeof ((await refused.json()) as { description?: unknown }).description).toBe('string');
    // Seconds other than 00: 422 with the documented text.
    const bad = new URL(target!);
    bad.searchParams.set('start', `${asked.get('start')!.slice(0, -2)}30`);
    const rejected = await fetch(bad, { headers: { [header!]: token! } });
    expect(rejected.status).toBe(422);
    expect(((await rejected.json()) as { description: string }).description).toBe(
      'Invalid time format. Time must be at minute precision',
    );

    p.child.kill('SIGTERM');
    expect(await exitWithin(p, 5000)).toEqual({ code: 0, signal: null });
  });

  it('is the same simulator for the same seed: the same window, the same answer', async () => {
    const answers: string[] = [];
    for (let i = 0; i < 2; i++) {
      const p = startCli(['simulate', '--port=0', '--seed=9']);
      const url = String((await p.logLine((l) => typeof l.url === 'string')).url);
      const res = await fetch(
        `${url}/app/metrics/v1/resources?account=acme&start=2026-01-01T10:00:00&end=2026-01-01T10:10:00`,
        { headers: { 'CDN-AUTH-TOKEN': 'acme-token' } },
      );
      expect(res.status).toBe(200);
      answers.push(await res.text());
      p.child.kill('SIGINT');
      expect(await exitWithin(p, 5000)).toEqual({ code: 0, signal: null });
    }
    expect(answers[1]).toBe(answers[0]);
  });

  it.each([
    [['--port', '70000'], '--port'],
    [['--fault-500', '2'], '--fault-500'],
    [['--no-such'], '--no-such'],
  ])('simulate %j exits 2 naming %s', async (args, named) => {
    const r = await runCli(['simulate', ...args]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(named);
  });
});

describe('demo', () => {
  it('serves cdn_ metrics of both demo accounts and stops on SIGTERM', async () => {
    const p = startCli(['demo', '--web.listen-address', '127.0.0.1:0']);
    const base = await servingUrl(p);
    let scrape = Scrape.of('');
    await waitFor(
      async () => {
        scrape = await Scrape.from(base);
        return ['demo', 'acme'].every((account) => scrape.all('cdn_resource_info', { account }).length > 0);
      },
      20_000,
      'both accounts on /metrics',
    );
    expect(scrape.value('cdn_up', { api: 'metrics', account: 'demo' })).toBe(1);
    p.child.kill('SIGTERM');
    expect(await exitWithin(p, 5000)).toEqual({ code: 0, signal: null });
    expect(p.stderr()).not.toContain('acme-token');
  });
});
