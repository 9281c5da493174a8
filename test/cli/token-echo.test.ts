/**
 * The token in nothing the exporter writes (docs/configuration.md, "Tokens"): `cdn-exporter run` against an upstream that echoes
 * the token back in every way found so far: as a wrongly typed field, as a key, URL-encoded, as the start of a body
 * that is not JSON (a parser quotes its first characters), base64-encoded in an error description, and as a
 * resource id (a /metrics label). Every output is then searched for the token as is, URL-encoded, base64 and
 * base64url, and for every 8-character slice of it: the log (JSON and logfmt), the landing page, /readyz, /metrics
 * and check-config's output.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import { demoWorld } from '../../src/simulator/world.js';
import { cliTestFolder, EXIT_WAIT_MS, exitWithin, runCli, startCli } from '../helpers/cli-process.js';
import { waitFor } from '../helpers/stack.js';
import { json, startTamperProxy, type TamperProxy } from '../helpers/tamper-proxy.js';

const TOKEN = 'tK9vQ2xLmN7pR4sW8yZ1aB3cD5eF6gH0';

/** Every form of the token that must appear nowhere, with a name for the failure message. */
function forbidden(): Array<[string, string]> {
  const out: Array<[string, string]> = [
    ['plain', TOKEN],
    ['URL-encoded', encodeURIComponent(TOKEN)],
    ['base64', Buffer.from(TOKEN).toString('base64')],
    ['base64url', Buffer.from(TOKEN).toString('base64url')],
  ];
  for (let i = 0; i + 8 <= TOKEN.length; i++) out.push([`slice ${i}..${i + 8}`, TOKEN.slice(i, i + 8)]);
  return out;
}

function expectClean(what: string, text: string): void {
  expect(text.length, `${what} is not empty`).toBeGreaterThan(0);
  for (const [form, s] of forbidden())
    expect(text.includes(s), `${what} holds the token (${form})`).toBe(false);
}

const dir = cliTestFolder('cli-echo-');
let sim: Simulator;
let proxy: TamperProxy;
beforeAll(async () => {
  const world = demoWorld().map((a) => ({ ...a, token: TOKEN }));
  sim = await startSimulator({ seed: 3, accounts: world }, { host: '127.0.0.1', port: 0 });
  proxy = await startTamperProxy(sim.url);
});
afterAll(async () => {
  await proxy?.close();
  await sim?.close();
});
afterEach(() => {
  proxy.tamper = undefined;
});

/** Rotates through the echoes, one per traffic answer. */
function echoingUpstream(): void {
  let n = 0;
  proxy.rewritten = 0;
  proxy.tamper = (req, up) => {
    if (!req.path.includes('/metrics/') || up.status !== 200) return undefined;
    const turn = n++ % 3;
    if (turn === 1) {
      // Not JSON: a JSON parser's message quotes the body's first characters.
      return { status: 200, contentType: 'application/json', body: `${TOKEN} is not how an answer starts` };
    }
    if (turn === 2) {
      return json(
        { description: `proxy saw Authorization: Basic ${Buffer.from(TOKEN).toString('base64')}` },
        500,
      );
    }
    const body = JSON.parse(up.body) as { data: Record<string, unknown>[] };
    const first = body.data[0]!;
    // A wrongly typed field holding the token, one holding it URL-encoded, a key that is the token.
    first.origin_status_200 = TOKEN;
    first.origin_status_204 = `https://cdn.example/cb?token=${encodeURIComponent(TOKEN)}`;
    first[TOKEN] = 1;
    // A resource whose id, name and cname are the token: label values of /metrics.
    body.data.push({ ...first, resource: TOKEN, resource_name: TOKEN, cname: TOKEN });
    return json(body);
  };
}

function config(format: string): string {
  const path = join(dir, `${format}.yml`);
  writeFileSync(
    path,
    [
      'api:',
      `  base_url: ${proxy.url}`,
      `  token: ${TOKEN}`,
      '  requests_per_second: 50',
      'metrics:',
      '  window: 5m',
      '  delay: 1m',
      '  lookback: 30m',
      'accounts:',
      '  - name: demo',
    ].join('\n'),
  );
  return path;
}

describe('an upstream echoing the token', () => {
  it.each(['json', 'logfmt'])(
    'never gets it into the log (%s), the pages, /metrics or check-config',
    async (format) => {
      echoingUpstream();
      const file = config(format);
      const p = startCli([
        '--config',
        file,
        '--web.listen-address',
        '127.0.0.1:0',
        '--log.level',
        'debug',
        '--log.format',
        format,
      ]);
      const line = await p.textLine(/serving \/metrics/);
      const base = `http://${/(?:"address":"|address=)([^"\s]+)/.exec(line)![1]}`;
      const pages: Array<[string, string]> = [];
      // Wait until every echo has reached the exporter at least once and been logged.
      await waitFor(
        async () => {
          for (const path of ['/', '/readyz', '/metrics'])
            pages.push([path, await (await fetch(`${base}${path}`)).text()]);
          const log = p.stderr();
          return (
            proxy.rewritten >= 6 &&
            /could not be used/.test(log) &&
            /not name/.test(log) &&
            /is not valid JSON|Unexpected token/.test(log) &&
            /500/.test(log) &&
            pages.some(([path, text]) => path === '/metrics' && /resource="<redacted>"/.test(text)) &&
            pages.some(([path, text]) => path === '/' && text.includes('&#60;redacted&#62;'))
          );
        },
        20_000,
        'every echo to be seen',
      ).catch((err: unknown) => {
        const last = pages.filter(([path]) => path === '/metrics').at(-1)?.[1] ?? '';
        throw new Error(
          `${String(err)}; rewritten ${proxy.rewritten}; resources ${last.match(/cdn_resource_info\{[^}]*\}/g)?.join(' ')}; log:\n${p.stderr().slice(-4000)}`,
        );
      });
      p.child.kill('SIGTERM');
      expect(await exitWithin(p, EXIT_WAIT_MS)).toEqual({ code: 0, signal: null });

      expectClean(`the ${format} log`, p.stderr());
      expect(p.stderr()).toContain('<redacted>');
      for (const [path, text] of pages) expectClean(`GET ${path}`, text);
      const metrics = pages.filter(([path]) => path === '/metrics').at(-1)![1];
      // The echoed resource is counted under the marker, and the masking is counted.
      expect(metrics).toMatch(/cdn_resource_info\{[^}]*resource="<redacted>"/);
      expect(metrics).toMatch(/cdn_exporter_secret_label_values_total [1-9]/);
      const landing = pages.filter(([path]) => path === '/').map(([, t]) => t);
      expect(landing.some((t) => t.includes('&#60;redacted&#62;'))).toBe(true);

      const checked = await runCli(['check-config', '--config', file]);
      expect(checked.code).toBe(0);
      expectClean('check-config', checked.stdout + checked.stderr);
    },
    40_000,
  );
});
