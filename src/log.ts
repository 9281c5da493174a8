import { type Logger, pino } from 'pino';
import { REDACTED, SECRETS } from './redact.js';

export type LogFormat = 'json' | 'logfmt';
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

export type { Logger };

/**
 * Paths that may carry the token in any log object. pino replaces them before a line is written; callers still
 * never put the token in a message (errors are built without it, see src/http).
 */
const REDACT = [
  'token',
  '*.token',
  'headers["cdn-auth-token"]',
  '*.headers["cdn-auth-token"]',
  'config.api.token',
  'config.accounts[*].token',
  'password',
  '*.password',
  'config.api.password',
  'config.accounts[*].password',
];

function logfmtValue(v: unknown): string {
  const s = typeof v === 'string' ? v : JSON.stringify(v);
  return /[\s="]/.test(s) || s === '' ? JSON.stringify(s) : s;
}

/** A minimal logfmt destination: pino writes JSON lines; this turns each into key=value pairs. */
function logfmtStream(out: NodeJS.WritableStream): { write(line: string): void } {
  const levels: Record<number, string> = {
    10: 'trace',
    20: 'debug',
    30: 'info',
    40: 'warn',
    50: 'error',
    60: 'fatal',
  };
  return {
    write(line: string) {
      const rec = JSON.parse(line) as Record<string, unknown>;
      const { time, level, msg, pid: _pid, hostname: _host, ...rest } = rec;
      const parts = [
        `ts=${new Date(Number(time)).toISOString()}`,
        `level=${levels[Number(level)] ?? level}`,
        `msg=${logfmtValue(msg ?? '')}`,
      ];
      for (const [k, v] of Object.entries(rest)) parts.push(`${k}=${logfmtValue(v)}`);
      out.write(`${parts.join(' ')}\n`);
    },
  };
}

export interface LoggerOptions {
  level?: LogLevel | 'silent';
  format?: LogFormat;
  /** Where lines go; stderr by default, a buffer in tests. */
  destination?: NodeJS.WritableStream;
}

/**
 * Every line, whole, through the registry of secrets (src/redact.ts) as it is written: whatever field, key or
 * message an echoed secret travels in, in whichever encoding, it is masked.
 */
function redacting(out: NodeJS.WritableStream): NodeJS.WritableStream {
  return {
    write: (line: string) => out.write(SECRETS.redact(String(line), 'log')),
  } as unknown as NodeJS.WritableStream;
}

export function createLogger(opts: LoggerOptions = {}): Logger {
  const destination = redacting(opts.destination ?? process.stderr);
  const options = {
    level: opts.level ?? 'info',
    base: undefined,
    redact: { paths: REDACT, censor: REDACTED },
  };
  if (opts.format === 'logfmt') return pino(options, logfmtStream(destination));
  return pino(options, destination);
}

export const silentLogger: Logger = pino({ level: 'silent' });
