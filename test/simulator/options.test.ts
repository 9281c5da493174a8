/**
 * The simulator's options from its command line (src/simulator/options.ts) against the flag table of
 * src/simulator/README.md, "Running it": defaults, the seconds-to-milliseconds flags, the bounds of each value
 * with the error naming the flag, and the usage text listing every flag. (Every flag's both forms, the unknown
 * flags and the exporter parser's wording are tested in ./server.test.ts.)
 */
import { describe, expect, it } from 'vitest';
import { UsageError } from '../../src/config/flags.js';
import { FAULT_KINDS } from '../../src/simulator/faults.js';
import { DEFAULT_SIMULATOR_PORT, parseSimulatorArgs, simulatorUsage } from '../../src/simulator/options.js';
import { readDoc, section } from '../helpers/markdown.js';

function errorOf(argv: string[]): string {
  try {
    parseSimulatorArgs(argv);
  } catch (err) {
    expect(err).toBeInstanceOf(UsageError);
    return (err as Error).message;
  }
  return 'no error';
}

/** The flags of the README's table ("| `--seed` | ..."), `--fault-<kind>` as given there. */
function readmeFlags(): string[] {
  const lines = section(readDoc('src/simulator/README.md'), '## Running it');
  return lines.flatMap((l) => {
    const m = /^\| `(--[a-z0-9<>-]+)/.exec(l);
    return m ? [m[1]!] : [];
  });
}

describe('parseSimulatorArgs', () => {
  it('has the defaults of the README: 127.0.0.1:8080, seed 1, nothing else set', () => {
    const { options, listen, help } = parseSimulatorArgs([]);
    expect(DEFAULT_SIMULATOR_PORT).toBe(8080);
    expect(listen).toEqual({ host: '127.0.0.1', port: 8080 });
    expect(options).toEqual({ seed: 1 });
    expect(help).toBe(false);
  });

  it('takes --token-lifetime and --ban-duration in seconds and gives milliseconds', () => {
    const { options } = parseSimulatorArgs(['--token-lifetime', '180', '--ban-duration=0.5']);
    expect(options.tokenLifetimeMs).toBe(180_000);
    expect(options.banDurationMs).toBe(500);
    expect(parseSimulatorArgs(['--ban-duration', '0']).options.banDurationMs).toBe(0);
  });

  it('takes every value at the edges of its range and refuses one step beyond, naming the flag and the value', () => {
    const ok: [string[], (o: ReturnType<typeof parseSimulatorArgs>) => unknown, unknown][] = [
      [['--port', '0'], (a) => a.listen.port, 0],
      [['--port', '65535'], (a) => a.listen.port, 65535],
      [['--lag', '0'], (a) => a.options.lagSeconds, 0],
      [['--rate-limit', '0'], (a) => a.options.rateLimit, 0],
      [['--slow-ms', '0'], (a) => a.options.slowMs, 0],
      [['--trickle-ms', '1'], (a) => a.options.trickleMs, 1],
      [['--fault-reset', '1'], (a) => a.options.faults, { reset: 1 }],
      [['--fault-503', '0'], (a) => a.options.faults, { '503': 0 }],
      [['--seed=-3'], (a) => a.options.seed, -3],
      [['--gzip', 'off'], (a) => a.options.gzip, false],
      [['--request-time-shape', 'number'], (a) => a.options.requestTimeShape, 'number'],
    ];
    for (const [argv, pick, want] of ok) expect(pick(parseSimulatorArgs(argv)), argv.join(' ')).toEqual(want);

    expect(errorOf(['--port', '65536'])).toBe('--port: expected a port 0..65535, got "65536"');
    expect(errorOf(['--port', '80.5'])).toBe('--port: expected a port 0..65535, got "80.5"');
    expect(errorOf(['--seed', '1.5'])).toBe('--seed: expected an integer, got "1.5"');
    expect(errorOf(['--rate-limit', '2.5'])).toBe(
      '--rate-limit: expected an integer >= 0 (0: none), got "2.5"',
    );
    expect(errorOf(['--slow-ms=-1'])).toBe('--slow-ms: expected milliseconds >= 0, got "-1"');
    expect(errorOf(['--trickle-ms', '0'])).toBe('--trickle-ms: expected milliseconds >= 1, got "0"');
    expect(errorOf(['--token-lifetime', '0'])).toBe('--token-lifetime: expected seconds > 0, got "0"');
    expect(errorOf(['--ban-duration=-1'])).toBe('--ban-duration: expected seconds >= 0, got "-1"');
    expect(errorOf(['--fault-502', '1.01'])).toBe('--fault-502: expected a rate in [0, 1], got "1.01"');
    expect(errorOf(['--gzip', 'yes'])).toBe('--gzip: expected on or off, got "yes"');
    expect(errorOf(['--request-time-shape', 'list'])).toBe(
      '--request-time-shape: expected one of object, flat, number, got "list"',
    );
  });

  it('refuses an empty value and text that is not a number', () => {
    expect(errorOf(['--host='])).toBe('--host: empty');
    expect(errorOf(['--seed='])).toBe('--seed: expected an integer, got ""');
    expect(errorOf(['--lag', ' '])).toBe('--lag: expected seconds >= 0, got " "');
    expect(errorOf(['--lag', 'Infinity'])).toBe('--lag: expected seconds >= 0, got "Infinity"');
    expect(errorOf(['--rate-limit', 'NaN'])).toBe(
      '--rate-limit: expected an integer >= 0 (0: none), got "NaN"',
    );
  });

  it('refuses fault rates that add up to more than 1, and sets no faults when none is given', () => {
    // Each rate is in range, so no one flag is wrong: the error is the sum's (a plain Error; `simulate` prints it
    // with the usage and exits 2, as for a UsageError).
    expect(() =>
      parseSimulatorArgs(['--fault-429', '0.5', '--fault-slow', '0.3', '--fault-trickle', '0.3']),
    ).toThrow(/^fault rates add up to 1\.1\d*, more than 1$/);
    expect(parseSimulatorArgs(['--fault-429', '0.5', '--fault-slow', '0.5']).options.faults).toEqual({
      '429': 0.5,
      slow: 0.5,
    });
    expect(parseSimulatorArgs(['--seed', '2']).options.faults).toBeUndefined();
  });
});

describe('simulatorUsage', () => {
  it('lists every flag of the README table, every fault kind, and -h/--help', () => {
    const usage = simulatorUsage();
    const flags = readmeFlags();
    expect(flags).toEqual([
      '--host',
      '--port',
      '--seed',
      '--lag',
      '--rate-limit',
      '--fault-<kind>',
      '--slow-ms',
      '--trickle-ms',
      '--gzip',
      '--request-time-shape',
      '--token-lifetime',
      '--ban-duration',
    ]);
    for (const flag of flags)
      expect(usage, flag).toContain(flag === '--fault-<kind>' ? '--fault-KIND' : flag);
    // And the parser takes each of them (a value every one of them accepts; --gzip's is on|off).
    for (const flag of flags) {
      const name = flag === '--fault-<kind>' ? '--fault-500' : flag;
      const value = flag === '--gzip' ? 'on' : flag === '--request-time-shape' ? 'flat' : '1';
      expect(() => parseSimulatorArgs([name, value]), flag).not.toThrow();
    }
    for (const kind of FAULT_KINDS) expect(usage).toMatch(new RegExp(`\\b${kind}\\b`));
    expect(usage).toContain('-h, --help');
    expect(usage).toContain(`(default ${DEFAULT_SIMULATOR_PORT})`);
  });
});
