/**
 * The simulator's options and their command-line form (`cdn-exporter simulate ...`).
 */
import type { Clock } from '../clock.js';
import type { SimUser } from './auth.js';
import { checkFaultRates, FAULT_KINDS, type FaultKind, type FaultRates } from './faults.js';
import type { RequestTimeShape, TrafficScale } from './traffic.js';
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
}

const SHAPES: readonly RequestTimeShape[] = ['object', 'flat', 'number'];
/** Port of `cdn-exporter simulate` when --port is not given. */
export const DEFAULT_SIMULATOR_PORT = 8080;

function numberArg(flag: string, value: string, check: (n: number) => boolean, what: string): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n) || !check(n)) {
    throw new Error(`${flag}: expected ${what}, got ${JSON.stringify(value)}`);
  }
  return n;
}

const int = (n: number) => Number.isInteger(n);

/**
 * Parses `--flag value` and `--flag=value` arguments. Flags: --host, --port, --seed, --lag (seconds),
 * --rate-limit (requests/s per token), --slow-ms, --request-time-shape (object|flat|number) and one
 * --fault-<kind> rate per fault kind (--fault-429, --fault-500, --fault-502, --fault-503, --fault-504,
 * --fault-reset, --fault-slow, --fault-malformed). Throws an error naming the flag on anything else.
 */
export function parseSimulatorArgs(argv: readonly string[]): SimulatorArgs {
  const options: SimulatorOptions = { seed: 1 };
  const listen = { host: '127.0.0.1', port: DEFAULT_SIMULATOR_PORT };
  const faults: FaultRates = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (!arg.startsWith('--')) throw new Error(`unexpected argument ${JSON.stringify(arg)}`);
    const eq = arg.indexOf('=');
    const flag = eq >= 0 ? arg.slice(0, eq) : arg;
    const known =
      [
        '--host',
        '--port',
        '--seed',
        '--lag',
        '--rate-limit',
        '--slow-ms',
        '--request-time-shape',
        '--token-lifetime',
        '--ban-duration',
      ].includes(flag) ||
      (flag.startsWith('--fault-') && (FAULT_KINDS as readonly string[]).includes(flag.slice(8)));
    if (!known) throw new Error(`unknown flag ${flag}`);
    let value: string;
    if (eq >= 0) value = arg.slice(eq + 1);
    else {
      const next = argv[++i];
      if (next === undefined) throw new Error(`${flag}: missing value`);
      value = next;
    }
    switch (flag) {
      case '--host':
        if (value === '') throw new Error('--host: empty');
        listen.host = value;
        break;
      case '--port':
        listen.port = numberArg(flag, value, (n) => int(n) && n >= 0 && n <= 65535, 'a port 0..65535');
        break;
      case '--seed':
        options.seed = numberArg(flag, value, int, 'an integer');
        break;
      case '--lag':
        options.lagSeconds = numberArg(flag, value, (n) => n >= 0, 'seconds >= 0');
        break;
      case '--rate-limit':
        options.rateLimit = numberArg(flag, value, (n) => int(n) && n >= 0, 'an integer >= 0 (0: none)');
        break;
      case '--slow-ms':
        options.slowMs = numberArg(flag, value, (n) => n >= 0, 'milliseconds >= 0');
        break;
      case '--token-lifetime':
        options.tokenLifetimeMs = numberArg(flag, value, (n) => n > 0, 'seconds > 0') * 1000;
        break;
      case '--ban-duration':
        options.banDurationMs = numberArg(flag, value, (n) => n >= 0, 'seconds >= 0') * 1000;
        break;
      case '--request-time-shape':
        if (!(SHAPES as readonly string[]).includes(value)) {
          throw new Error(`${flag}: expected one of ${SHAPES.join(', ')}, got ${JSON.stringify(value)}`);
        }
        options.requestTimeShape = value as RequestTimeShape;
        break;
      default:
        faults[flag.slice(8) as FaultKind] = numberArg(
          flag,
          value,
          (n) => n >= 0 && n <= 1,
          'a rate in [0, 1]',
        );
    }
  }
  if (Object.keys(faults).length > 0) {
    checkFaultRates(faults);
    options.faults = faults;
  }
  return { options, listen };
}

export function simulatorUsage(): string {
  return `Usage: cdn-exporter simulate [flags]

Serves the simulator of the traffic metrics, network-DVR and recording-settings APIs (accounts demo and acme;
their tokens are printed at start).

Flags (--flag value or --flag=value):
  --host HOST                 address to listen on (default 127.0.0.1)
  --port PORT                 port, 0 for any free one (default ${DEFAULT_SIMULATOR_PORT})
  --seed N                    seed of the deterministic traffic, ranges and ids (default 1)
  --lag SECONDS               a traffic minute is complete only this long after it ends (default 0)
  --rate-limit N              requests per second per token; above it 429 with Retry-After (default: none)
  --request-time-shape S      how *_request_time appears: ${SHAPES.join(' | ')} (default object)
  --slow-ms MS                delay of a 'slow' fault (default 5000)
  --token-lifetime SECONDS    lifetime of tokens the login issues (default 21599, just under 6 hours)
  --ban-duration SECONDS      how long 7 wrong passwords ban a login user (default 10800)
  --fault-KIND RATE           share of requests answered with fault KIND, 0..1; KIND is one of
                              ${FAULT_KINDS.join(', ')}
  -h, --help                  show this help
`;
}
