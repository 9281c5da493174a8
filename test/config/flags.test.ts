import { describe, expect, it } from 'vitest';
import { parseCommandLine, parseListenAddress, UsageError, usage } from '../../src/config/index.js';

function usageError(argv: string[]): string {
  try {
    parseCommandLine(argv);
  } catch (e) {
    expect(e).toBeInstanceOf(UsageError);
    return (e as Error).message;
  }
  throw new Error(`accepted: ${argv.join(' ')}`);
}

describe('parseCommandLine', () => {
  it('defaults to run with the documented defaults', () => {
    expect(parseCommandLine([])).toEqual({
      command: 'run',
      listenAddress: ':9877',
      listen: { port: 9877 },
      logLevel: 'info',
      logFormat: 'json',
      healthzOpen: false,
      help: false,
      version: false,
      rest: [],
    });
  });

  it('--web.config.file and --web.healthz-open; the latter alone is refused', () => {
    const a = parseCommandLine(['--web.config.file', '/etc/web.yml', 'check-config', '--web.healthz-open']);
    expect(a).toMatchObject({ command: 'check-config', webConfigFile: '/etc/web.yml', healthzOpen: true });
    expect(() => parseCommandLine(['--web.healthz-open'])).toThrow(
      /--web.healthz-open: only means something/,
    );
    expect(() => parseCommandLine(['--web.config.file='])).toThrow(/--web.config.file: needs a file path/);
  });

  it('reads every flag, before or after the command, in both spellings', () => {
    const a = parseCommandLine([
      '--config=/etc/cdn.yaml',
      'check-config',
      '--web.listen-address',
      '127.0.0.1:9100',
      '--log.level=debug',
      '--log.format',
      'logfmt',
    ]);
    expect(a).toMatchObject({
      command: 'check-config',
      configFile: '/etc/cdn.yaml',
      listen: { host: '127.0.0.1', port: 9100 },
      logLevel: 'debug',
      logFormat: 'logfmt',
    });
    expect(parseCommandLine(['demo', '--config', 'x.yaml']).configFile).toBe('x.yaml');
    expect(parseCommandLine(['run']).command).toBe('run');
  });

  it('--help, -h and --version', () => {
    expect(parseCommandLine(['--help']).help).toBe(true);
    expect(parseCommandLine(['-h']).help).toBe(true);
    expect(parseCommandLine(['--version']).version).toBe(true);
  });

  it('hands everything after simulate to the simulator untouched', () => {
    const cl = parseCommandLine([
      '--log.level',
      'warn',
      'simulate',
      '--seed',
      '42',
      '--faults=500:0.1',
      'extra',
      '-x',
    ]);
    expect(cl.command).toBe('simulate');
    expect(cl.logLevel).toBe('warn');
    expect(cl.rest).toEqual(['--seed', '42', '--faults=500:0.1', 'extra', '-x']);
  });

  const ERRORS: Array<[string[], string]> = [
    [['--bogus'], 'unknown flag --bogus'],
    [['run', '--web.listen_address', ':1'], 'unknown flag --web.listen_address'],
    [['-x'], 'unknown flag -x'],
    [['--config'], 'flag --config needs a value'],
    [['--help=yes'], 'flag --help takes no value'],
    [['serve'], 'unknown command "serve" (commands: run, simulate, demo, check-config, backfill)'],
    [['run', 'now'], 'unexpected argument "now" after run'],
    [['--log.level', 'trace'], '--log.level: must be one of debug, info, warn, error, got "trace"'],
    [['--log.format', 'text'], '--log.format: must be one of json, logfmt, got "text"'],
    [['--web.listen-address', '9877'], '--web.listen-address: expected host:port or :port, got "9877"'],
    [['--config='], '--config: needs a file path'],
  ];

  it.each(ERRORS)('%j is refused: %s', (argv, message) => {
    expect(usageError(argv)).toBe(message);
  });

  it('usage names every command and flag', () => {
    const text = usage();
    for (const word of [
      'run',
      'simulate',
      'demo',
      'check-config',
      '--config',
      '--web.listen-address',
      '--log.level',
      '--log.format',
      '--help',
      '--version',
    ]) {
      expect(text).toContain(word);
    }
  });
});

describe('parseListenAddress', () => {
  const GOOD: Array<[string, { host?: string; port: number }]> = [
    [':9877', { port: 9877 }],
    ['0.0.0.0:80', { host: '0.0.0.0', port: 80 }],
    ['localhost:0', { host: 'localhost', port: 0 }],
    ['[::1]:9877', { host: '::1', port: 9877 }],
    ['[::]:9877', { host: '::', port: 9877 }],
  ];
  it.each(GOOD)('%s', (text, expected) => {
    expect(parseListenAddress(text)).toEqual(expected);
  });

  it.each(['9877', 'host:', ':70000', 'a:b', '::1:9877', ''])('refuses %j', (text) => {
    expect(() => parseListenAddress(text)).toThrow(
      `expected host:port or :port, got ${JSON.stringify(text)}`,
    );
  });
});
