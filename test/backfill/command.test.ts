/**
 * `cdn-exporter backfill` as its entry runs it (src/backfill/command.ts backfillCommand), in-process with the
 * process's parts given (streams, environment, signal): what it refuses before reading anything, with exit 2 and
 * its reason (bad configuration or flags, a --resume without progress, a progress left by a run not resumed or by
 * another backfill, an --output that exists); --gaps with nothing listed; the summary line a user reads when done,
 * its figures those of the file written; an interruption by SIGINT or SIGTERM, exit 130 or 143, saying how to go
 * on; and the labels every series ends with. Failures of the API through the command:
 * test/backfill/faults.test.ts; resuming: test/backfill/resume.test.ts.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { backfillCommand, backfillLabels } from '../../src/backfill/command.js';
import { MINUTE } from '../../src/clock.js';
import { loadConfig, parseCommandLine } from '../../src/config/index.js';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import { closedEnd, iso, readOm, simConfig } from './om.js';

let sim: Simulator;
const dirs: string[] = [];
beforeAll(async () => {
  sim = await startSimulator({ seed: 41 }, { host: '127.0.0.1', port: 0 });
});
afterAll(async () => {
  await sim.close();
});
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
function folder(): string {
  const dir = mkdtempSync(join(tmpdir(), 'cdn-backfill-command-'));
  dirs.push(dir);
  return dir;
}

/** The command with `args` after `backfill`; `signal` aborted with a signal's name for an interruption. */
async function backfill(args: string[], signal = new AbortController().signal) {
  let stdout = '';
  let stderr = '';
  const code = await backfillCommand({
    cl: parseCommandLine(['backfill', '--log.level', 'error', ...args]),
    env: {},
    hostname: 'test-host',
    version: '0.0.0-test',
    stdout: { write: (t: string) => (stdout += t) },
    stderr: { write: (t: string) => (stderr += t) },
    signal,
    backoff: { baseMs: 5, capMs: 50 },
    checkpointMs: 50,
  });
  return { code, stdout, stderr };
}

const TO = closedEnd(6 * MINUTE);
const range = (minutes: number) => ['--from', iso(TO - minutes * MINUTE), '--to', iso(TO)];
const RATE = '  requests_per_second: 50';

describe('backfill: refused before anything is read (exit 2)', () => {
  it('a bad configuration or bad flags, with the reason on stderr and nothing on stdout', async () => {
    const dir = folder();
    const metricsRequests = () => sim.requestLog.filter((e) => e.api === 'metrics').length;
    const before = metricsRequests();
    const bad = join(dir, 'bad.yml');
    writeFileSync(bad, 'api:\n  base_url: not a url\naccounts: []\n');
    const r1 = await backfill(['--config', bad, ...range(20), '--output', join(dir, 'x.om')]);
    expect(r1.code).toBe(2);
    expect(r1.stderr).toMatch(/^cdn-exporter backfill: \S/);
    expect(r1.stdout).toBe('');
    const config = simConfig(dir, sim.url, [RATE]);
    const r2 = await backfill(['--config', config, '--output', join(dir, 'x.om')]);
    expect(r2.code).toBe(2);
    expect(r2.stderr).toMatch(/^cdn-exporter backfill: .*--from/);
    expect(metricsRequests()).toBe(before);
  });

  it('--resume without progress, a progress left without --resume, or the progress of another backfill', async () => {
    const dir = folder();
    const config = simConfig(dir, sim.url, [RATE]);
    const out = join(dir, 'x.om');
    const args = ['--config', config, ...range(20), '--output', out];
    const nothing = await backfill([...args, '--resume']);
    expect([nothing.code, nothing.stderr]).toEqual([
      2,
      `cdn-exporter backfill: --resume: nothing to resume, ${out}.progress does not exist\n`,
    ]);

    // An interrupted run leaves its progress.
    const stop = new AbortController();
    stop.abort('SIGTERM');
    expect((await backfill(args, stop.signal)).code).toBe(143);
    expect(existsSync(`${out}.progress`)).toBe(true);
    const again = await backfill(args);
    expect([again.code, again.stderr]).toEqual([
      2,
      `cdn-exporter backfill: an interrupted backfill left ${out}.progress: run the same command with --resume to continue it, or remove it to start anew\n`,
    ]);
    const other = await backfill(['--config', config, ...range(30), '--output', out, '--resume']);
    expect(other.code).toBe(2);
    expect(other.stderr).toBe(
      `cdn-exporter backfill: --resume: ${out}.progress is the progress of another backfill (mode=range window=10m accounts=demo,acme output=${out} from=${iso(TO - 20 * MINUTE)} to=${iso(TO)})\n`,
    );
  });

  it('an --output that exists', async () => {
    const dir = folder();
    const out = join(dir, 'x.om');
    writeFileSync(out, 'keep me');
    const r = await backfill(['--config', simConfig(dir, sim.url, [RATE]), ...range(20), '--output', out]);
    expect([r.code, r.stderr]).toEqual([
      2,
      `cdn-exporter backfill: --output ${out} exists: remove it or choose another file\n`,
    ]);
    expect(readFileSync(out, 'utf8')).toBe('keep me');
  });
});

describe('backfill: runs', () => {
  it('--gaps with no gap listed says so and exits 0', async () => {
    const dir = folder();
    const config = simConfig(dir, sim.url, [RATE, `state_file: ${join(dir, 'state.json')}`]);
    const r = await backfill(['--config', config, '--gaps', '--output', join(dir, 'x.om')]);
    expect([r.code, r.stdout]).toEqual([0, 'backfill: no gap to fill\n']);
    expect(existsSync(join(dir, 'x.om'))).toBe(false);
  });

  it('done: one summary line whose figures are those of the file written, exit 0', async () => {
    const dir = folder();
    const out = join(dir, 'x.om');
    const r = await backfill(['--config', simConfig(dir, sim.url, [RATE]), ...range(20), '--output', out]);
    expect(r.code, r.stderr).toBe(0);
    const m =
      /^backfill done: 4 windows \(0 skipped\), 4 requests, (\d+) samples in \d+\.\ds; wrote (.+) \((\d+) bytes\)\n$/.exec(
        r.stdout,
      );
    expect(m, r.stdout).not.toBeNull();
    expect(m![2]).toBe(out);
    expect(Number(m![3])).toBe(statSync(out).size);
    const om = readOm(readFileSync(out, 'utf8'));
    expect(Number(m![1])).toBe(om.samples.length);
    // Without remote_write: job cdn-exporter-settled, instance the host name.
    expect(
      om.samples.every((s) => s.labels.job === 'cdn-exporter-settled' && s.labels.instance === 'test-host'),
    ).toBe(true);
    expect(existsSync(`${out}.progress`)).toBe(false);
  });

  it('interrupted: 130 after SIGINT, 143 after SIGTERM, saying how to resume', async () => {
    const dir = folder();
    const config = simConfig(dir, sim.url, [RATE]);
    for (const [signal, code] of [
      ['SIGINT', 130],
      ['SIGTERM', 143],
    ] as const) {
      const out = join(dir, `${signal}.om`);
      const stop = new AbortController();
      stop.abort(signal);
      const r = await backfill(['--config', config, ...range(20), '--output', out], stop.signal);
      expect(r.code, r.stderr).toBe(code);
      expect(r.stdout).toMatch(/^backfill interrupted: 0 windows \(0 skipped\), 0 requests, 0 samples in /);
      expect(r.stderr).toBe(
        'cdn-exporter backfill: interrupted; run the same command with --resume to continue\n',
      );
    }
    // --remote-write keeps its progress beside state_file (remote_write needs one), and says how to go on.
    const state = join(dir, 'state.json');
    const rw = simConfig(
      dir,
      sim.url,
      [RATE, `state_file: ${state}`, 'remote_write:', '  url: http://127.0.0.1:9/api/v1/write'],
      'rw.yml',
    );
    const stop = new AbortController();
    stop.abort('SIGTERM');
    const r = await backfill(['--config', rw, ...range(20), '--remote-write'], stop.signal);
    expect(r.code, r.stderr).toBe(143);
    expect(r.stdout).toMatch(/; remote write: 0 samples sent, 0 dropped\n$/);
    expect(r.stderr).toBe(
      'cdn-exporter backfill: interrupted; run the same command with --resume to continue\n',
    );
    expect(existsSync(join(dir, 'state.backfill.json'))).toBe(true);
  });
});

describe('backfillLabels', () => {
  it('job and instance of remote_write (and its external labels), else cdn-exporter-settled and the host name', () => {
    const dir = folder();
    const plain = loadConfig({ file: simConfig(dir, sim.url), env: {}, hostname: 'h1' });
    expect(backfillLabels(plain, 'h1')).toEqual([
      ['job', 'cdn-exporter-settled'],
      ['instance', 'h1'],
    ]);
    const file = simConfig(
      dir,
      sim.url,
      [
        `state_file: ${join(dir, 'state.json')}`,
        'remote_write:',
        '  url: http://127.0.0.1:9/w',
        '  job: settled',
        '  external_labels: {zone: b, cluster: c1}',
      ],
      'rw.yml',
    );
    const rw = loadConfig({ file, env: {}, hostname: 'h2' });
    // remote_write.instance (its default the host name the configuration was loaded with) wins.
    expect(backfillLabels(rw, 'another-host')).toEqual([
      ['job', 'settled'],
      ['instance', 'h2'],
      ['cluster', 'c1'],
      ['zone', 'b'],
    ]);
  });
});
