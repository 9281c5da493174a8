/**
 * The simulator's options and their command-line form (`cdn-exporter simulate ...`).
 */
import type { ParseArgsOptionsConfig } from 'node:util';
import type { Clock } from '../clock.js';
import { parseFlags, UsageError } from '../config/flags.js';
import type { SimUser } from './auth.js';
import { checkFaultRates, FAULT_KINDS, type FaultRates } from './faults.js';
import type { RequestTimeShape } from './traffic.js';
import type { TrafficScale } from './traffic-model.js';
import type { SimAccount } from './types.js';

export interface SimulatorOptions {
  seed: number;
  /** Default: systemClock. */
  clock?: Clock;
  /** Default: demoWorld(). */
  accounts?: SimAccount[];
  /** Traffic volume per `account/resource` (default 1). Default: the demo world's when `accounts` is unset. */
  trafficScale?: TrafficScale;
  /** A traffic minute is complete only this many seconds after it ends (default 0). */
  lagSeconds?: number;
  faults?: FaultRates;
  /** Requests per second per token (sliding one-second window of the clock); above it 429. Default: none. */
  rateLimit?: number;
  /** Delay of a `slow` fault, real milliseconds (default 5000). */
  slowMs?: number;
  /** Real milliseconds between the bytes of a `trickle` fault's body (default 1000). */
  trickleMs?: number;
  /** Answers gzip-compressed when the request's Accept-Encoding allows it (default false). */
  gzip?: boolean;
  /** How `*_request_time` appears in traffic answers (default `object`). */
  requestTimeShape?: RequestTimeShape;
  /** Login users (default: DEMO_USER with DEMO_PASSWORD, seeing every account). */
  users?: SimUser[];
  /** Lifetime of issued tokens, ms (default 21,599,000: just under 6 hours). */
  tokenLifetimeMs?: number;
  /** How long 7 wrong passwords ban a user, ms (default 3 hours). */
  banDurationMs?: number;
}

export interface ListenOptions {
  host?: string;
  port?: number;
}

export interface SimulatorArgs {
  options: SimulatorOptions;
  listen: { host: string; port: number };
  /** -h or --help: print simulatorUsage() instead. */
  help: boolean;
}

const SHAPES: readonly RequestTimeShape[] = ['object', 'flat', 'number'];
/** Port of `cdn-exporter simulate` when --port is not given. */
export const DEFAULT_SIMULATOR_PORT = 8080;

function numberArg(flag: string, value: string, check: (n: number) => boolean, what: string): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n) || !check(n)) {
    throw new UsageError(`${flag}: expected ${what}, got ${JSON.stringify(value)}`);
  }
  return n;
}

const int = (n: number) => Number.isInteger(n);

const OPTIONS = {
  host: { type: 'string' },
  port: { type: 'string' },
  seed: { type: 'string' },
  lag: { type: 'string' },
  'rate-limit': { type: 'string' },
  'slow-ms': { type: 'string' },
  'trickle-ms': { type: 'string' },
  gzip: { type: 'string' },
  'request-time-shape': { type: 'string' },
  'token-lifetime': { type: 'string' },
  'ban-duration': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
  ...Object.fromEntries(FAULT_KINDS.map((kind) => [`fault-${kind}`, { type: 'string' }] as const)),
} satisfies ParseArgsOptionsConfig;

/**
 * Parses the simulator's flags with the exporter's parser (`node:util` parseArgs, src/config/flags.ts):
 * `--flag value` or `--flag=value`. Flags: --host, --port, --seed, --lag (seconds), --rate-limit (requests/s per
 * token), --slow-ms, --trickle-ms, --gzip (on|off), --request-time-shape (object|flat|number), one --fault-<kind>
 * rate per fault kind (--fault-429, --fault-500, --fault-502, --fault-503, --fault-504, --fault-reset,
 * --fault-slow, --fault-malformed, --fault-trickle), --token-lifetime and --ban-duration (seconds), and -h/--help.
 * Throws a UsageError naming the flag on anything else.
 */
export function parseSimulatorArgs(argv: readonly string[]): SimulatorArgs {
  const { values } = parseFlags([...argv], OPTIONS, false);
  const v = values as Record<string, string | boolean | undefined>;
  const str = (flag: string): string | undefined => {
    const value = v[flag];
    return typeof value === 'string' ? value : undefined;
  };
  const options: SimulatorOptions = { seed: 1 };
  const listen = { host: '127.0.0.1', port: DEFAULT_SIMULATOR_PORT };
  const host = str('host');
  if (host !== undefined) {
    if (host === '') throw new UsageError('--host: empty');
    listen.host = host;
  }
  const num = (flag: string, check: (n: number) => boolean, what: string): number | undefined => {
    const value = str(flag);
    return value === undefined ? undefined : numberArg(`--${flag}`, value, check, what);
  };
  listen.port = num('port', (n) => int(n) && n >= 0 && n <= 65535, 'a port 0..65535') ?? listen.port;
  options.seed = num('seed', int, 'an integer') ?? options.seed;
  const lag = num('lag', (n) => n >= 0, 'seconds >= 0');
  if (lag !== undefined) options.lagSeconds = lag;
  const rateLimit = num('rate-limit', (n) => int(n) && n >= 0, 'an integer >= 0 (0: none)');
  if (rateLimit !== undefined) options.rateLimit = rateLimit;
  const slowMs = num('slow-ms', (n) => n >= 0, 'milliseconds >= 0');
  if (slowMs !== undefined) options.slowMs = slowMs;
  const trickleMs = num('trickle-ms', (n) => n >= 1, 'milliseconds >= 1');
  if (trickleMs !== undefined) options.trickleMs = trickleMs;
  const gzip = str('gzip');
  if (gzip !== undefined) {
    if (gzip !== 'on' && gzip !== 'off')
      throw new UsageError(`--gzip: expected on or off, got ${JSON.stringify(gzip)}`);
    options.gzip = gzip === 'on';
  }
  const tokenLifetime = num('token-lifetime', (n) => n > 0, 'seconds > 0');
  if (tokenLifetime !== undefined) options.tokenLifetimeMs = tokenLifetime * 1000;
  const banDuration = num('ban-duration', (n) => n >= 0, 'seconds >= 0');
  if (banDuration !== undefined) options.banDurationMs = banDuration * 1000;
  const shape = str('request-time-shape');
  if (shape !== undefined) {
    if (!(SHAPES as readonly string[]).includes(shape)) {
      throw new UsageError(
        `--request-time-shape: expected one of ${SHAPES.join(', ')}, got ${JSON.stringify(shape)}`,
      );
    }
    options.requestTimeShape = shape as RequestTimeShape;
  }
  const faults: FaultRates = {};
  for (const kind of FAULT_KINDS) {
    const rate = num(`fault-${kind}`, (n) => n >= 0 && n <= 1, 'a rate in [0, 1]');
    if (rate !== undefined) faults[kind] = rate;
  }
  if (Object.keys(faults).length > 0) {
    checkFaultRates(faults);
    options.faults = faults;
  }
  return { options, listen, help: v.help === true };
}

export function simulatorUsage(): string {
  return `Usage: cdn-exporter simulate [flags]

Serves the simulator of the traffic metrics, network-DVR and recording-settings APIs (accounts demo and acme;
their tokens are printed at start).

Flags (--flag value or --flag=value; a value starting with '-' only as --flag=VALUE):
  --host HOST                 address to listen on (default 127.0.0.1)
  --port PORT                 port, 0 for any free one (default ${DEFAULT_SIMULATOR_PORT})
  --seed N                    seed of the deterministic traffic, ranges and ids (default 1)
  --lag SECONDS               a traffic minute is complete only this long after it ends (default 0)
  --rate-limit N              requests per second per token; above it 429 with Retry-After (default: none)
  --request-time-shape S      how *_request_time appears: ${SHAPES.join(' | ')} (default object)
  --slow-ms MS                delay of a 'slow' fault (default 5000)
  --trickle-ms MS             time between the body bytes of a 'trickle' fault (default 1000)
  --gzip on|off               gzip answers when Accept-Encoding allows it (default off)
  --token-lifetime SECONDS    lifetime of tokens the login issues (default 21599, just under 6 hours)
  --ban-duration SECONDS      how long 7 wrong passwords ban a login user (default 10800)
  --fault-KIND RATE           share of requests answered with fault KIND, 0..1; KIND is one of
                              ${FAULT_KINDS.join(', ')}
  -h, --help                  show this help
`;
}
