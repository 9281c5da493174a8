/**
 * The exporter's logger (src/log.ts), through createLogger: JSON lines by default (pino's, without pid and
 * hostname), logfmt when asked (`ts=... level=... msg=...` then the fields, values quoted when they hold a space,
 * `=` or `"`, or are empty), lines below the level not written; a token or password under a known field name is
 * replaced, and a secret of the registry (src/redact.ts) is masked wherever in the line it travels.
 */
import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger, type LoggerOptions } from '../src/log.js';
import { REDACTED, SECRETS } from '../src/redact.js';

function logger(opts: Omit<LoggerOptions, 'destination'> = {}) {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer | string, _enc, done) {
      for (const line of String(chunk).split('\n')) if (line) lines.push(line);
      done();
    },
  });
  return { log: createLogger({ ...opts, destination }), lines };
}

const registered: string[] = [];
afterEach(() => {
  for (const s of registered.splice(0)) SECRETS.remove(s);
});

describe('createLogger', () => {
  it('writes one JSON object a line, at info and above by default, without pid or hostname', () => {
    const { log, lines } = logger();
    log.debug('not written');
    log.info({ account: 'acme', windows: 3 }, 'polled');
    log.error('failed');
    expect(lines).toHaveLength(2);
    const first = JSON.parse(lines[0]!);
    expect(first).toMatchObject({ level: 30, msg: 'polled', account: 'acme', windows: 3 });
    expect(typeof first.time).toBe('number');
    expect(first).not.toHaveProperty('pid');
    expect(first).not.toHaveProperty('hostname');
    expect(JSON.parse(lines[1]!)).toMatchObject({ level: 50, msg: 'failed' });
  });

  it('writes what its level lets through: debug writes all, warn drops info, silent writes nothing', () => {
    const at = (level: LoggerOptions['level']) => {
      const { log, lines } = logger({ level });
      log.debug('d');
      log.info('i');
      log.warn('w');
      log.error('e');
      return lines.map((l) => JSON.parse(l).msg);
    };
    expect(at('debug')).toEqual(['d', 'i', 'w', 'e']);
    expect(at('warn')).toEqual(['w', 'e']);
    expect(at('silent')).toEqual([]);
  });

  it('logfmt: ts, level and msg first, then the fields; values quoted when they must be', () => {
    const { log, lines } = logger({ format: 'logfmt' });
    log.warn(
      { account: 'acme', note: 'two words', eq: 'a=b', quote: 'say "hi"', empty: '', n: 5, obj: { x: 1 } },
      'slow answer',
    );
    expect(lines).toHaveLength(1);
    const line = lines[0]!;
    expect(line).toMatch(/^ts=\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z level=warn msg="slow answer" /);
    expect(line).toContain(' account=acme ');
    expect(line).toContain(' note="two words" ');
    expect(line).toContain(' eq="a=b" ');
    expect(line).toContain(' quote="say \\"hi\\"" ');
    expect(line).toContain(' empty="" ');
    expect(line).toContain(' n=5 ');
    expect(line.endsWith(' obj="{\\"x\\":1}"')).toBe(true);
    expect(line).not.toContain('pid=');
    // A message without spaces is not quoted; the level is a word.
    const { log: l2, lines: out } = logger({ format: 'logfmt', level: 'debug' });
    l2.debug('started');
    expect(out[0]).toMatch(/ level=debug msg=started$/);
  });

  it.each(['json', 'logfmt'] as const)(
    '%s: replaces a token or password under a known field name',
    (format) => {
      const { log, lines } = logger({ format });
      log.info({ token: 'tok-1', request: { token: 'tok-2', headers: { 'cdn-auth-token': 'tok-3' } } }, 'a');
      log.info({ password: 'pw-1', login: { password: 'pw-2' } }, 'b');
      log.info(
        {
          config: {
            api: { token: 'tok-4', password: 'pw-3' },
            accounts: [{ token: 'tok-5', password: 'pw-4' }],
          },
        },
        'c',
      );
      const text = lines.join('\n');
      for (const secret of ['tok-1', 'tok-2', 'tok-3', 'tok-4', 'tok-5', 'pw-1', 'pw-2', 'pw-3', 'pw-4']) {
        expect(text, secret).not.toContain(secret);
      }
      expect(text).toContain(REDACTED);
    },
  );

  it.each(['json', 'logfmt'] as const)(
    '%s: masks a registered secret wherever it travels in the line',
    (format) => {
      const secret = 'Zx8-Q/w+e r"t&y9Lm-log-test';
      SECRETS.add(secret);
      registered.push(secret);
      const { log, lines } = logger({ format });
      log.info(
        {
          body: `{"access_token":${JSON.stringify(secret)}}`,
          url: `https://cdn/?t=${encodeURIComponent(secret)}`,
        },
        `got ${secret}`,
      );
      log.info({ [`key-${secret}`]: 1 }, 'in a key');
      expect(lines).toHaveLength(2);
      const text = lines.join('\n');
      expect(text).not.toContain(secret.slice(0, 10));
      expect(text).not.toContain(encodeURIComponent(secret).slice(0, 10));
      expect(text).toContain(REDACTED);
      // Everything else of the line stays.
      expect(text).toContain('got ');
      expect(text).toContain('in a key');
    },
  );
});
