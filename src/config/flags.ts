/**
 * The command line: `cdn-exporter [flags] [command] [flags]`, flags named as Prometheus exporters name theirs.
 *
 * Commands: run (default), simulate, demo, check-config, backfill. Everything after `simulate` belongs to the
 * simulator's own parser and is returned untouched in `rest`; the exporter's flags for `simulate` go before the word.
 * `backfill`'s own flags (BACKFILL_OPTIONS) are taken only after its word; their values are checked by
 * src/backfill/plan.ts, which knows the configuration they are checked against.
 *
 * Default listen address `:9877` (all interfaces, port 9877), in the 9xxx range exporters use; whether another
 * exporter registered it was not checked, the flag moves it. `host:port`, `[ipv6]:port` and `:port` are accepted;
 * port 0 picks a free port.
 */
import { type ParseArgsOptionsConfig, parseArgs } from 'node:util';
import type { LogFormat, LogLevel } from '../log.js';

export const COMMANDS = ['run', 'simulate', 'demo', 'check-config', 'backfill'] as const;
export type Command = (typeof COMMANDS)[number];
export const LOG_LEVELS: readonly LogLevel[] = ['debug', 'info', 'warn', 'error'];
export const LOG_FORMATS: readonly LogFormat[] = ['json', 'logfmt'];
export const DEFAULT_LISTEN_ADDRESS = ':9877';

export interface ListenAddress {
  /** Undefined: every interface. IPv6 without brackets (`::1`). */
  host?: string;
  port: number;
}

export interface CommandLine {
  command: Command;
  configFile?: string;
  /** `--web.config.file`: TLS and basic auth in the exporter-toolkit format (src/web). */
  webConfigFile?: string;
  /** `--web.healthz-open`: /healthz answers without basic auth (kubelet probes); TLS still applies. */
  healthzOpen: boolean;
  /** As given (or the default), for logs and the landing page. */
  listenAddress: string;
  listen: ListenAddress;
  logLevel: LogLevel;
  logFormat: LogFormat;
  help: boolean;
  version: boolean;
  /** Arguments after `simulate`, for the simulator's parser; empty for the other commands. */
  rest: string[];
  /** `backfill`'s flags as given (checked by src/backfill/plan.ts); only for that command. */
  backfill?: BackfillFlags;
}

/** The flags of `cdn-exporter backfill`, as text: src/backfill/plan.ts checks them against the configuration. */
export interface BackfillFlags {
  from?: string;
  to?: string;
  /** `--accounts a,b`, split on commas, blanks dropped. */
  accounts?: string[];
  output?: string;
  remoteWrite: boolean;
  gaps: boolean;
  resume: boolean;
  window?: string;
  progress?: string;
}

/** A bad command line; the message names the flag or argument. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

const OPTIONS = {
  config: { type: 'string' },
  'web.listen-address': { type: 'string' },
  'web.config.file': { type: 'string' },
  'web.healthz-open': { type: 'boolean' },
  'log.level': { type: 'string' },
  'log.format': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean' },
} as const;

/** Taken only after the word `backfill`. */
const BACKFILL_OPTIONS = {
  from: { type: 'string' },
  to: { type: 'string' },
  accounts: { type: 'string' },
  output: { type: 'string' },
  'remote-write': { type: 'boolean' },
  gaps: { type: 'boolean' },
  resume: { type: 'boolean' },
  window: { type: 'string' },
  progress: { type: 'string' },
} as const;

type Values = ReturnType<typeof parse>['values'];

/**
 * `node:util` parseArgs, strict, with its errors turned into UsageErrors naming the flag. Shared by the
 * exporter's flags and the simulator's (src/simulator/options.ts).
 */
export function parseFlags<T extends ParseArgsOptionsConfig>(
  args: string[],
  options: T,
  allowPositionals: boolean,
): { values: ReturnType<typeof parseArgs<{ options: T; strict: true }>>['values']; positionals: string[] } {
  try {
    return parseArgs({ args, options, strict: true, allowPositionals });
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    // Node quotes the flag as '--name', '-x', or '-h, --help' for one with a short alias.
    const flag = /'(?:-\w, )?(-[^' ]+)/.exec(err.message)?.[1] ?? '';
    if (err.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') throw new UsageError(`unknown flag ${flag}`);
    if (err.code === 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL') {
      const arg = /'([^']*)'/.exec(err.message)?.[1] ?? '';
      throw new UsageError(`unexpected argument ${JSON.stringify(arg)}`);
    }
    if (err.code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE') {
      if (/does not take an argument/.test(err.message)) throw new UsageError(`flag ${flag} takes no value`);
      if (/ambiguous/.test(err.message))
        throw new UsageError(`flag ${flag}: give a value that starts with '-' as ${flag}=VALUE`);
      throw new UsageError(`flag ${flag} needs a value`);
    }
    throw new UsageError(err.message);
  }
}

function parse(args: string[]) {
  return parseFlags(args, OPTIONS, true);
}

/** The entries of `o` whose value is not undefined. */
function defined<T extends Record<string, string | undefined>>(o: T): { [K in keyof T]?: string } {
  const out: { [K in keyof T]?: string } = {};
  for (const [k, v] of Object.entries(o)) if (v !== undefined) out[k as keyof T] = v;
  return out;
}

export function parseListenAddress(text: string): ListenAddress {
  const match = /^(?:\[([0-9a-fA-F:.]+)\]|([^:[\]\s]*)):(\d{1,5})$/.exec(text);
  const port = Number(match?.[3]);
  if (!match || port > 65_535) {
    throw new UsageError(`--web.listen-address: expected host:port or :port, got ${JSON.stringify(text)}`);
  }
  const host = match[1] ?? match[2];
  return host ? { host, port } : { port };
}

function oneOf<T extends string>(
  flag: string,
  value: string | undefined,
  allowed: readonly T[],
  fallback: T,
): T {
  if (value === undefined) return fallback;
  if ((allowed as readonly string[]).includes(value)) return value as T;
  throw new UsageError(`--${flag}: must be one of ${allowed.join(', ')}, got ${JSON.stringify(value)}`);
}

/** Index of the first positional argument (the command), or -1. */
function commandIndex(argv: string[]): number {
  const { tokens } = parseArgs({
    args: argv,
    // backfill's string flags take a value: a value is not the command, wherever the flag is.
    options: { ...OPTIONS, ...BACKFILL_OPTIONS },
    strict: false,
    allowPositionals: true,
    tokens: true,
  });
  return tokens.find((t) => t.kind === 'positional')?.index ?? -1;
}

/** Parses `argv` (without node and the script: `process.argv.slice(2)`). Throws UsageError. */
export function parseCommandLine(argv: string[]): CommandLine {
  const at = commandIndex(argv);
  const before = at < 0 ? argv : argv.slice(0, at);
  const word = at < 0 ? 'run' : argv[at]!;
  if (!(COMMANDS as readonly string[]).includes(word)) {
    throw new UsageError(`unknown command ${JSON.stringify(word)} (commands: ${COMMANDS.join(', ')})`);
  }
  const command = word as Command;
  let values: Values = parse(before).values;
  let rest: string[] = [];
  let backfill: BackfillFlags | undefined;
  if (command === 'backfill') {
    const parsed = parseFlags(argv.slice(at + 1), { ...OPTIONS, ...BACKFILL_OPTIONS }, true);
    if (parsed.positionals.length > 0) {
      throw new UsageError(`unexpected argument ${JSON.stringify(parsed.positionals[0])} after backfill`);
    }
    const { from, to, accounts, output, window, progress, ...common } = parsed.values;
    const { 'remote-write': remoteWrite, gaps, resume, ...shared } = common;
    values = { ...values, ...shared };
    backfill = {
      remoteWrite: remoteWrite ?? false,
      gaps: gaps ?? false,
      resume: resume ?? false,
      ...defined({ from, to, output, window, progress }),
    };
    if (accounts !== undefined)
      backfill.accounts = accounts
        .split(',')
        .map((a) => a.trim())
        .filter((a) => a !== '');
  } else if (at >= 0) {
    const after = argv.slice(at + 1);
    if (command === 'simulate') {
      rest = after;
    } else {
      const parsed = parse(after);
      if (parsed.positionals.length > 0) {
        throw new UsageError(`unexpected argument ${JSON.stringify(parsed.positionals[0])} after ${command}`);
      }
      values = { ...values, ...parsed.values };
    }
  }
  const listenAddress = values['web.listen-address'] ?? DEFAULT_LISTEN_ADDRESS;
  const out: CommandLine = {
    command,
    listenAddress,
    listen: parseListenAddress(listenAddress),
    logLevel: oneOf('log.level', values['log.level'], LOG_LEVELS, 'info'),
    logFormat: oneOf('log.format', values['log.format'], LOG_FORMATS, 'json'),
    healthzOpen: values['web.healthz-open'] ?? false,
    help: values.help ?? false,
    version: values.version ?? false,
    rest,
  };
  if (backfill) out.backfill = backfill;
  if (values.config !== undefined) {
    if (values.config === '') throw new UsageError('--config: needs a file path');
    out.configFile = values.config;
  }
  const web = values['web.config.file'];
  if (web !== undefined) {
    if (web === '') throw new UsageError('--web.config.file: needs a file path');
    out.webConfigFile = web;
  }
  if (out.healthzOpen && out.webConfigFile === undefined) {
    throw new UsageError('--web.healthz-open: only means something with --web.config.file');
  }
  return out;
}

export function usage(program = 'cdn-exporter'): string {
  return `Usage: ${program} [flags] [command]

Prometheus exporter for a CDN's traffic, network-DVR and recording APIs.

Commands:
  run            poll the CDN and serve /metrics (default)
  simulate       serve the simulator of the three APIs (its own flags follow the word)
  demo           simulator and exporter in one process, pointed at each other
  check-config   validate the configuration (and --web.config.file) and print it, tokens redacted
  backfill       write the settled series of past windows to a file or remote write (backfill --help)

Flags:
  --config FILE                 YAML configuration file (without it: CDN_API_URL, CDN_API_TOKEN, CDN_ACCOUNTS)
  --web.listen-address ADDR     host:port or :port to serve on (default ${DEFAULT_LISTEN_ADDRESS})
  --web.config.file FILE        TLS and basic auth, in the format of Prometheus' exporter-toolkit (also checked
                                by check-config); re-read when it or the certificates change
  --web.healthz-open            serve /healthz without basic auth (for kubelet probes; TLS still applies)
  --log.level LEVEL             ${LOG_LEVELS.join(' | ')} (default info)
  --log.format FORMAT           ${LOG_FORMATS.join(' | ')} (default json)
  -h, --help                    show this help
  --version                     print the version

Environment: CDN_API_URL, CDN_API_TOKEN (or CDN_API_USERNAME and CDN_API_PASSWORD), CDN_ACCOUNTS fill what the
file leaves out; SHARD and SHARDS override sharding.
`;
}
