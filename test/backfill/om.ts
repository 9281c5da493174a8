/**
 * The backfill tests' own helpers: a configuration file for a simulator, a range of closed windows, a small
 * reader of the OpenMetrics file a backfill writes (as promtool reads it: `# TYPE`, samples, `# EOF`), and the
 * command run in-process with a short backoff.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { backfillCommand } from '../../src/backfill/command.js';
import { MINUTE } from '../../src/clock.js';
import { parseCommandLine } from '../../src/config/index.js';

export interface OmSample {
  name: string;
  labels: Record<string, string>;
  /** The series' identity: name and labels as written. */
  key: string;
  value: number;
  timestampMs: number;
}

export interface OmFile {
  types: Map<string, string>;
  samples: OmSample[];
  /** Each family's samples are together, under its `# TYPE`, and `# EOF` ends the file. */
  wellFormed: boolean;
}

/** Reads what the backfill wrote (label values without escapes: the simulator's ids have none). */
export function readOm(text: string): OmFile {
  const types = new Map<string, string>();
  const samples: OmSample[] = [];
  let family = '';
  let wellFormed = text.endsWith('# EOF\n');
  for (const line of text.split('\n')) {
    if (line === '' || line === '# EOF') continue;
    const type = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (type) {
      if (types.has(type[1]!)) wellFormed = false;
      types.set(type[1]!, type[2]!);
      family = type[1]!;
      continue;
    }
    const m = /^([a-z_]+)(?:\{(.*)\})? (\S+) (\d+)\.(\d{3})$/.exec(line);
    if (!m) {
      wellFormed = false;
      continue;
    }
    const name = m[1]!;
    if (name !== family && name !== `${family}_total`) wellFormed = false;
    const labels: Record<string, string> = {};
    for (const pair of (m[2] ?? '').split(',').filter(Boolean)) {
      const eq = pair.indexOf('=');
      labels[pair.slice(0, eq)] = pair.slice(eq + 2, -1);
    }
    samples.push({
      name,
      labels,
      key: `${name}{${m[2] ?? ''}}`,
      value: Number(m[3]),
      timestampMs: Number(m[4]) * 1000 + Number(m[5]),
    });
  }
  return { types, samples, wellFormed };
}

/** The newest ten-minute mark that is at least `closedMs` old: the end of a range of closed windows. */
export function closedEnd(closedMs: number, now = Date.now()): number {
  const step = 10 * MINUTE;
  return Math.floor((now - closedMs) / step) * step;
}

/** Writes a configuration for the simulator at `url` with accounts `demo` and `acme` (their own tokens). */
export function simConfig(dir: string, url: string, extra: string[] = [], name = 'config.yml'): string {
  const file = join(dir, name);
  writeFileSync(
    file,
    [
      'api:',
      `  base_url: ${url}`,
      ...extra,
      'accounts:',
      '  - name: demo',
      '    token: demo-token',
      '  - name: acme',
      '    token: acme-token',
      '',
    ].join('\n'),
  );
  return file;
}

export const iso = (ms: number) => new Date(ms).toISOString();

/** `cdn-exporter backfill ARGS` in-process (the command's own entry), a short backoff, logs at `level`. */
export async function backfillInProcess(
  args: string[],
  level = 'error',
): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await backfillCommand({
    cl: parseCommandLine(['backfill', '--log.level', level, ...args]),
    env: {},
    hostname: 'test-host',
    version: '0.0.0-test',
    stdout: { write: (t: string) => (stdout += t) },
    stderr: { write: (t: string) => (stderr += t) },
    signal: new AbortController().signal,
    backoff: { baseMs: 5, capMs: 50 },
    checkpointMs: 50,
  });
  return { code, stdout, stderr };
}
