/**
 * The configuration file's schema (src/config/schema.ts), as the loader and docs/configuration.md rely on it:
 * strict at every level (an unknown key anywhere is an issue at its path, never a silent default), every default
 * filled in from DEFAULTS and nowhere else (durations in ms, sizes in bytes), every ceiling and floor of CEILINGS
 * accepted at its value and refused one step past it, durations as Prometheus writes them, and the values it
 * normalises. Each rule's message as a user reads it through loadConfig: load.test.ts.
 */
import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { formatDuration, parseDuration } from '../../src/config/duration.js';
import { REMOTE_WRITE_CEILINGS } from '../../src/config/remote-write-schema.js';
import { CEILINGS, DEFAULTS, duration, fileSchema } from '../../src/config/schema.js';
import { parseSize } from '../../src/config/size.js';
import { TOP_RESOURCES_CEILINGS } from '../../src/config/top-resources-schema.js';

const MINUTE = 60_000;
type Doc = Record<string, unknown>;

/** The smallest document the schema takes: api.base_url is its only required key. */
const minimal = (): Doc => ({ api: { base_url: 'https://api.cdn.example' } });

/** `doc` with `value` at the dotted `path` (sections made as needed). */
function withValue(doc: Doc, path: string, value: unknown): Doc {
  const keys = path.split('.');
  let at = doc;
  for (const key of keys.slice(0, -1)) {
    at[key] ??= {};
    at = at[key] as Doc;
  }
  at[keys.at(-1)!] = value;
  return doc;
}

/** The issues of parsing `doc`, as `path: message` with the path dotted (array indexes as numbers). */
function issues(doc: unknown): string[] {
  const r = fileSchema.safeParse(doc);
  return r.success ? [] : r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
}

/** zod's definition of a schema, as far as the walk below reads it. */
interface Def {
  type: string;
  shape?: Record<string, z.ZodType>;
  innerType?: z.ZodType;
  element?: z.ZodType;
  in?: z.ZodType;
  out?: z.ZodType;
  options?: z.ZodType[];
}
const defOf = (s: z.ZodType): Def => (s as unknown as { _zod: { def: Def } })._zod.def;

/** The dotted path of every object in the file's schema (`accounts.0` for an account), from the schema itself. */
function objectPaths(schema: z.ZodType, path: string[] = []): string[][] {
  const def = defOf(schema);
  switch (def.type) {
    case 'object':
      return [
        path,
        ...Object.entries(def.shape!).flatMap(([key, inner]) => objectPaths(inner, [...path, key])),
      ];
    case 'optional':
    case 'default':
    case 'prefault':
    case 'nullable':
      return objectPaths(def.innerType!, path);
    case 'array':
      return objectPaths(def.element!, [...path, '0']);
    case 'pipe':
      return [...objectPaths(def.in!, path), ...objectPaths(def.out!, path)];
    case 'union':
      return def.options!.flatMap((o) => objectPaths(o, path));
    default:
      return [];
  }
}

describe('the file schema', () => {
  const paths = objectPaths(fileSchema).filter((p) => p.length > 0);

  it('finds the sections it walks', () => {
    const dotted = paths.map((p) => p.join('.'));
    expect(dotted).toEqual(
      expect.arrayContaining([
        'api',
        'metrics',
        'accounts.0',
        'accounts.0.commit',
        'server.auth_failure_limit',
      ]),
    );
  });

  it('refuses an unknown key at every level, at its path', () => {
    const missed: string[] = [];
    for (const path of [[], ...paths]) {
      const doc = minimal();
      // An array element is an object of its own; the key goes into a fresh one.
      let at: Doc = doc;
      for (const [i, key] of path.entries()) {
        const next = path[i + 1] === '0' ? [{}] : {};
        if (key === '0') {
          at = (at as unknown as Doc[])[0]!;
          continue;
        }
        at[key] ??= next;
        at = at[key] as Doc;
      }
      at.no_such_key = 1;
      const where = path.join('.');
      if (!issues(doc).includes(`${where}: Unrecognized key: "no_such_key"`)) missed.push(where || '(top)');
    }
    expect(missed).toEqual([]);
  });

  it('fills every default from DEFAULTS: durations in ms, sizes in bytes, patterns anchored', () => {
    const out = fileSchema.parse(minimal()) as unknown as Doc;
    const wrong: string[] = [];
    const check = (got: unknown, want: unknown, path: string) => {
      if (typeof want === 'object' && want !== null) {
        for (const [k, v] of Object.entries(want)) check((got as Doc)?.[k], v, `${path}.${k}`);
        return;
      }
      let expected: unknown = want;
      if (got instanceof RegExp) {
        if (got.source !== `^(?:${want})$`) wrong.push(`${path}: ${got} for ${want}`);
        return;
      }
      if (typeof want === 'string' && typeof got === 'number')
        expected = parseDuration(want) ?? parseSize(want);
      if (got !== expected) wrong.push(`${path}: ${String(got)}, not ${String(expected)} (${String(want)})`);
    };
    const { interval, remote_write: _sectionOnlyWhenSet, ...sections } = DEFAULTS;
    for (const [section, defaults] of Object.entries(sections)) check(out[section], defaults, section);
    check(out.dvr, { interval }, 'dvr');
    check(out.recordings, { interval }, 'recordings');
    expect(wrong).toEqual([]);
    // Optional keys stay absent: nothing is pushed, no state is kept, no account is assumed.
    expect(out.remote_write).toBeUndefined();
    expect(out.state_file).toBeUndefined();
    expect(out.accounts).toBeUndefined();
  });
});

/** Each ceiling or floor of CEILINGS, the keys it bounds and how they are written. */
const BOUNDS: Array<{
  ceiling: keyof typeof CEILINGS;
  side: 'max' | 'min';
  kind: 'int' | 'number' | 'duration' | 'size';
  keys: string[];
}> = [
  { ceiling: 'timeoutMs', side: 'max', kind: 'duration', keys: ['api.timeout'] },
  { ceiling: 'requestsPerSecond', side: 'max', kind: 'number', keys: ['api.requests_per_second'] },
  { ceiling: 'concurrency', side: 'max', kind: 'int', keys: ['api.concurrency'] },
  { ceiling: 'maxBodyBytes', side: 'max', kind: 'size', keys: ['api.max_body_bytes'] },
  { ceiling: 'minBodyBytes', side: 'min', kind: 'size', keys: ['api.max_body_bytes'] },
  { ceiling: 'delayMs', side: 'max', kind: 'duration', keys: ['metrics.delay'] },
  {
    ceiling: 'lookbackMs',
    side: 'max',
    kind: 'duration',
    keys: ['metrics.lookback', 'metrics.max_catch_up'],
  },
  { ceiling: 'revisitMs', side: 'max', kind: 'duration', keys: ['metrics.revisit'] },
  { ceiling: 'counterRetentionMs', side: 'max', kind: 'duration', keys: ['metrics.counter_retention'] },
  {
    ceiling: 'intervalMs',
    side: 'max',
    kind: 'duration',
    keys: [
      'dvr.interval',
      'recordings.interval',
      'accounts_discovery.interval',
      'server.auth_failure_limit.interval',
    ],
  },
  { ceiling: 'shards', side: 'max', kind: 'int', keys: ['sharding.shards'] },
  {
    ceiling: 'maxSeries',
    side: 'max',
    kind: 'int',
    keys: ['limits.max_series', 'limits.max_series_per_account'],
  },
  {
    ceiling: 'minSeries',
    side: 'min',
    kind: 'int',
    keys: ['limits.max_series', 'limits.max_series_per_account'],
  },
  { ceiling: 'maxLabelLength', side: 'max', kind: 'int', keys: ['limits.max_label_length'] },
  { ceiling: 'minLabelLength', side: 'min', kind: 'int', keys: ['limits.max_label_length'] },
  { ceiling: 'maxConnections', side: 'max', kind: 'int', keys: ['server.max_connections'] },
  { ceiling: 'minConnections', side: 'min', kind: 'int', keys: ['server.max_connections'] },
  { ceiling: 'maxScrapesInFlight', side: 'max', kind: 'int', keys: ['server.max_scrapes_in_flight'] },
  {
    ceiling: 'serverTimeoutMs',
    side: 'max',
    kind: 'duration',
    keys: ['server.idle_timeout', 'server.write_timeout'],
  },
  { ceiling: 'maxDiscoveredAccounts', side: 'max', kind: 'int', keys: ['accounts_discovery.max_accounts'] },
];

/** How a user writes `n` of this kind, and the value one step past `n` on `side`. */
function written(kind: (typeof BOUNDS)[number]['kind'], n: number): unknown {
  return kind === 'duration' ? formatDuration(n) : n;
}
function pastIt(kind: (typeof BOUNDS)[number]['kind'], side: 'max' | 'min', n: number): number {
  // A minute past a duration ceiling: every duration here may be whole minutes.
  const step = kind === 'duration' ? MINUTE : kind === 'number' ? 0.5 : 1;
  return side === 'max' ? n + step : n - step;
}

describe('the ceilings and floors of CEILINGS', () => {
  it('are each bounded by the table below (remote_write and top_resources: their own schema files)', () => {
    const elsewhere = new Set([
      ...Object.keys(REMOTE_WRITE_CEILINGS),
      ...Object.keys(TOP_RESOURCES_CEILINGS),
    ]);
    const own = Object.keys(CEILINGS).filter((k) => !elsewhere.has(k));
    expect(BOUNDS.map((b) => b.ceiling).sort()).toEqual(own.sort());
  });

  it.each(BOUNDS.flatMap((b) => b.keys.map((key) => ({ ...b, key }))))(
    '$key: $ceiling ($side) accepted, one step past it refused at the key',
    ({ ceiling, side, kind, key }) => {
      const n = CEILINGS[ceiling];
      expect(issues(withValue(minimal(), key, written(kind, n)))).toEqual([]);
      const refused = issues(withValue(minimal(), key, written(kind, pastIt(kind, side, n))));
      expect(refused).toHaveLength(1);
      expect(refused[0]!.startsWith(`${key}: `)).toBe(true);
    },
  );
});

describe('duration()', () => {
  const parse = (rule: Parameters<typeof duration>[0], value: unknown) => {
    const r = duration(rule).safeParse(value);
    return r.success ? r.data : r.error.issues.map((i) => i.message).join('; ');
  };

  it('reads Prometheus durations to milliseconds, and a bare 0 as 0 as Prometheus does', () => {
    expect(parse({}, '1h30m')).toBe(90 * MINUTE);
    expect(parse({}, '500ms')).toBe(500);
    expect(parse({}, 0)).toBe(0);
    expect(parse({}, '0')).toBe(0);
  });

  it('refuses a number with no unit, other types, and text that is no duration, quoting what was written', () => {
    expect(parse({}, 5)).toBe('must be a duration with a unit like 90s, 5m or 1h30m, got 5');
    expect(parse({}, null)).toBe('must be a duration like 90s, 5m or 1h30m, got null');
    expect(parse({}, ['5m'])).toBe('must be a duration like 90s, 5m or 1h30m, got a list or mapping');
    expect(parse({}, '5 minutes')).toBe('must be a duration like 90s, 5m or 1h30m, got "5 minutes"');
  });

  it('holds its range and whole minutes, and names both ends when it has two', () => {
    expect(parse({ min: MINUTE, max: 10 * MINUTE }, '11m')).toBe('must be between 1m and 10m, got 11m');
    expect(parse({ min: MINUTE }, '30s')).toBe('must be at least 1m, got 30s');
    expect(parse({ max: MINUTE }, '61s')).toBe('must be at most 1m, got 61s');
    expect(parse({ wholeMinutes: true }, '90s')).toBe('must be whole minutes, got 90s');
    expect(parse({ wholeMinutes: true }, '2m')).toBe(2 * MINUTE);
  });
});

describe('values the schema normalises for the rest of the exporter', () => {
  const parsed = (doc: Doc) => fileSchema.parse(doc) as unknown as Doc & { api: Doc; metrics: Doc };

  it('drops the trailing slashes of api.base_url, and refuses a URL that is not http(s) without echoing it', () => {
    expect(parsed({ api: { base_url: 'https://api.cdn.example//' } }).api.base_url).toBe(
      'https://api.cdn.example',
    );
    const refused = issues({ api: { base_url: 'ftp://user:hunter2@cdn.example' } });
    expect(refused).toEqual(['api.base_url: must be an http:// or https:// URL']);
  });

  it('trims inline tokens, and refuses one that is only whitespace', () => {
    expect(parsed(withValue(minimal(), 'api.token', '  tok-1 \n')).api.token).toBe('tok-1');
    expect(issues(withValue(minimal(), 'api.token', '   '))).toEqual(['api.token: must not be empty']);
  });

  it('takes whole-number resource ids as their text and lists each resource, metric and stream once', () => {
    const doc = withValue(minimal(), 'metrics.resources', [123, '123', 'abc', 0]);
    withValue(doc, 'metrics.metrics', ['edge_requests_total', 'edge_requests_total']);
    doc.accounts = [{ name: 'acme', dvr_streams: ['live/a', 'live/a', 'live/b'] }];
    const out = parsed(doc);
    expect(out.metrics.resources).toEqual(['123', 'abc', '0']);
    expect(out.metrics.metrics).toEqual(['edge_requests_total']);
    expect((out.accounts as Doc[])[0]!.dvr_streams).toEqual(['live/a', 'live/b']);
    expect(issues(withValue(minimal(), 'metrics.resources', [1.5]))).toEqual([
      'metrics.resources.0: must be a resource id (text or a whole number), got 1.5',
    ]);
  });

  it('anchors accounts_discovery.include and exclude: a pattern matches whole account names', () => {
    const doc = withValue(minimal(), 'accounts_discovery.include', 'ac|prod-.*');
    withValue(doc, 'accounts_discovery.exclude', 'prod-test');
    const d = parsed(doc).accounts_discovery as { include: RegExp; exclude: RegExp };
    expect(['ac', 'acme', 'prod-eu', 'xprod-eu'].filter((n) => d.include.test(n))).toEqual(['ac', 'prod-eu']);
    expect(d.exclude.test('prod-test')).toBe(true);
    expect(d.exclude.test('prod-testing')).toBe(false);
  });
});
