/**
 * The exporter process against a hostile login and inventory (issue 25, the rows about the process): a login that
 * answers a 10 MB token or a lifetime of 1e16 ms crashed it (exit 1, a crash loop under a supervisor); an inventory
 * of 100,000 accounts kept /healthz from answering and SIGTERM from stopping it. What a user checks: the process
 * stays up and says why it cannot log in, /healthz answers while discovery starts accounts, and SIGTERM ends it
 * with exit 0 within the stop bound (5 s, as the other process tests).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Simulator } from '../../src/simulator/server.js';
import { DEMO_PASSWORD, DEMO_USER } from '../../src/simulator/world.js';
import { type CliProcess, cliTestFolder, exitWithin, servingUrl, startCli } from '../helpers/cli-process.js';
import { startTestSimulator } from '../helpers/per-test.js';

const dir = cliTestFolder('cli-doors-');

async function exporterOf(s: Simulator, discovery = false): Promise<{ p: CliProcess; base: string }> {
  const config = join(dir, 'config.yml');
  writeFileSync(
    config,
    [
      'api:',
      `  base_url: ${s.url}`,
      `  username: ${DEMO_USER}`,
      `  password: ${DEMO_PASSWORD}`,
      '  timeout: 5s',
      `accounts: ${discovery ? '[]' : '[{name: demo}]'}`,
      ...(discovery ? ['accounts_discovery:', '  enabled: true'] : []),
    ].join('\n'),
  );
  const p = startCli(['--config', config, '--web.listen-address', '127.0.0.1:0']);
  return { p, base: await servingUrl(p, 20_000) };
}

async function sigterm(p: CliProcess): Promise<void> {
  p.child.kill('SIGTERM');
  const exit = await exitWithin(p, 5000);
  expect(exit, 'still running 5 s after SIGTERM').toEqual({ code: 0, signal: null });
}

describe('the exporter process against hostile doors', () => {
  it('row 1: a login answering a 10 MB token: the process stays up, says why, is not ready', async () => {
    const sim = await startTestSimulator({ seed: 7 });
    sim.hostileLogin({ kind: 'fields', token: 'T'.repeat(10_000_000) });
    const { p, base } = await exporterOf(sim);
    const failed = await p.logLine((l) => l.msg === 'login failed; retrying', 20_000);
    expect(failed.error).toBe('login answer larger than 65536 bytes');
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    expect((await fetch(`${base}/readyz`)).status).toBe(503);
    await sigterm(p);
  });

  it('row 2: a lifetime of 1e16 ms: logged in with 30 days, the process stays up', async () => {
    const sim = await startTestSimulator({ seed: 7 });
    sim.hostileLogin({ kind: 'fields', lifetime: 1e16 });
    const { p, base } = await exporterOf(sim);
    const line = await p.logLine((l) => l.msg === 'logged in', 20_000);
    expect(String(line.lifetime)).toContain('out of range');
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    await sigterm(p);
  });

  it('row 7: an inventory of 100,000 accounts: /healthz answers while they start, SIGTERM stops it', async () => {
    const sim = await startTestSimulator({ seed: 7 });
    const names = Array.from({ length: 100_000 }, (_, i) => `acct-${String(i).padStart(6, '0')}`);
    sim.setInventoryBody(JSON.stringify(names.map((name) => ({ status: 'active', name }))));
    const { p, base } = await exporterOf(sim, true);
    // The round's line comes before the accounts start; the cap's warning with it.
    await p.logLine((l) => l.msg === 'discovered accounts' && l.count === 100_000, 60_000);
    await p.logLine(
      (l) => typeof l.msg === 'string' && l.msg.includes('accounts_discovery.max_accounts'),
      60_000,
    );
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    await sigterm(p);
  }, 120_000);
});
