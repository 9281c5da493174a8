/**
 * Loading the configuration: the YAML file (optional), then the environment, then validation.
 *
 * Environment (passed in; no module reads process.env):
 * - Without a file, `CDN_API_URL`, `CDN_API_TOKEN` and `CDN_ACCOUNTS` (comma-separated names) are enough.
 * - With a file, the environment fills only what the file leaves out: `api.base_url` <- CDN_API_URL,
 *   `api.token` <- CDN_API_TOKEN (only when the file has neither api.token nor api.token_file),
 *   `accounts` <- CDN_ACCOUNTS (only when the file has no accounts key).
 * - A login: `api.username` <- CDN_API_USERNAME and `api.password` <- CDN_API_PASSWORD, only where the file
 *   names no credential of the api section (CDN_API_TOKEN is then not used either when the file names a login).
 * - `SHARD` / `SHARDS` override `sharding` (a StatefulSet passes its pod index this way).
 * Empty variables count as unset.
 *
 * Every problem found is reported at once in a ConfigError. Messages never contain a token: values of token keys
 * are never echoed, and YAML syntax errors are reported by position only (the parser's excerpt of the source
 * could show a token).
 */
import { readFileSync } from 'node:fs';
import { parseDocument } from 'yaml';
import type { z } from 'zod';
import { isRecord } from '../http/parse.js';
import { type ConfigIssue, crossCheck } from './cross-check.js';
import { fileSchema } from './schema.js';
import { type Config, toConfig } from './typed-config.js';

export type Env = Record<string, string | undefined>;

export interface LoadOptions {
  /** Path of the YAML file; none: the environment alone. */
  file?: string;
  env: Env;
  /** Reads the file as UTF-8 text; defaults to fs.readFileSync. */
  readFile?: (path: string) => string;
  /** The machine's host name: `remote_write.instance` when the file leaves it out or empty. Default ''. */
  hostname?: string;
}

export function formatIssue(issue: ConfigIssue): string {
  return issue.path ? `${issue.path}: ${issue.message}` : issue.message;
}

export class ConfigError extends Error {
  readonly issues: readonly ConfigIssue[];

  constructor(issues: ConfigIssue[], file?: string) {
    const where = file ? ` (${file})` : '';
    super(`invalid configuration${where}:\n${issues.map((i) => `  ${formatIssue(i)}`).join('\n')}`);
    this.name = 'ConfigError';
    this.issues = issues;
  }
}

const REQUIRED_HINTS: Record<string, string> = {
  'api.base_url': 'required (set it in the file or CDN_API_URL)',
  accounts: 'required (list them in the file or set CDN_ACCOUNTS)',
};

const EXPECTED: Record<string, string> = {
  string: 'a string',
  number: 'a number',
  int: 'an integer',
  boolean: 'true or false',
  array: 'a list',
  object: 'a mapping',
};

function pathText(path: readonly PropertyKey[]): string {
  let out = '';
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`;
    else out += out === '' ? String(part) : `.${String(part)}`;
  }
  return out;
}

function join(base: string, key: string): string {
  return base === '' ? key : `${base}.${key}`;
}

/**
 * What was found, for "got ...": anything by its kind, never a string's text; numbers and booleans as such,
 * except under a token key (`token: 123456` is a YAML number and still a secret).
 */
function kind(input: unknown, path = ''): string {
  if (input === null) return 'null';
  if (Array.isArray(input)) return 'a list';
  const secret = /(^|\.)(token|password)$/.test(path);
  if ((typeof input === 'number' || typeof input === 'boolean') && !secret) return String(input);
  if (typeof input === 'object') return 'a mapping';
  return `a ${typeof input}`;
}

function fromZod(issue: z.core.$ZodIssue): ConfigIssue[] {
  const path = pathText(issue.path);
  switch (issue.code) {
    case 'unrecognized_keys':
      return issue.keys.map((key) => ({ path: join(path, key), message: 'unknown key' }));
    case 'invalid_type': {
      if (issue.input === undefined) return [{ path, message: REQUIRED_HINTS[path] ?? 'required' }];
      const expected = EXPECTED[issue.expected] ?? issue.expected;
      return [{ path, message: `must be ${expected}, got ${kind(issue.input, path)}` }];
    }
    case 'invalid_value': {
      const allowed = issue.values.map((v) => String(v)).join(', ');
      const got = typeof issue.input === 'string' ? JSON.stringify(issue.input) : kind(issue.input, path);
      return [{ path, message: `must be one of ${allowed}, got ${got}` }];
    }
    case 'too_small':
    case 'too_big': {
      if (issue.origin !== 'number') return [{ path, message: issue.message }];
      const bound = issue.code === 'too_small' ? issue.minimum : issue.maximum;
      const word =
        issue.code === 'too_small'
          ? issue.inclusive
            ? 'at least'
            : 'more than'
          : issue.inclusive
            ? 'at most'
            : 'less than';
      return [{ path, message: `must be ${word} ${String(bound)}, got ${kind(issue.input, path)}` }];
    }
    default:
      return [{ path, message: issue.message }];
  }
}

const present = (v: string | undefined): v is string => v !== undefined && v.trim() !== '';

/** Alias expansions allowed in one file: a real configuration has a handful; a billion-laughs file has millions. */
const MAX_ALIAS_COUNT = 100;

/** The key at `offset` of `text` (where the yaml parser places a duplicate key error), or undefined. */
function keyAt(text: string, offset: number): string | undefined {
  const m = /^("(?:[^"\\\n]|\\.)*"|'[^'\n]*'|[^:,{}[\]\n#]+?)\s*:/.exec(text.slice(offset));
  if (!m) return undefined;
  const key = m[1]!.trim();
  return /^["']/.test(key) ? key.slice(1, -1) : key;
}

function parseYaml(text: string, file: string): { raw: Record<string, unknown>; issues: ConfigIssue[] } {
  const doc = parseDocument(text, { uniqueKeys: true, prettyErrors: true });
  if (doc.errors.length > 0) {
    const issues = doc.errors.map((e) => {
      const pos = e.linePos?.[0];
      const where = `${file}${pos ? `:${pos.line}:${pos.col}` : ''}`;
      if (e.code === 'DUPLICATE_KEY') {
        const key = keyAt(text, e.pos[0]);
        const named = key === undefined ? '' : ` ${JSON.stringify(key)}`;
        return {
          path: '',
          message: `${where}: invalid YAML: duplicate key${named} (a key may appear once per mapping)`,
        };
      }
      // Only the first line: the rest of a pretty message is an excerpt of the source.
      const what = e.message.split('\n')[0]!.replace(/ at line \d+, column \d+:?$/, '');
      return { path: '', message: `${where}: invalid YAML: ${what}` };
    });
    return { raw: {}, issues };
  }
  let value: unknown;
  try {
    value = doc.toJS({ maxAliasCount: MAX_ALIAS_COUNT });
  } catch (e) {
    // yaml says it with a ReferenceError ("Excessive alias count ..."): name the problem in our own words.
    const message =
      e instanceof ReferenceError && /alias/i.test(e.message)
        ? `${file}: invalid YAML: too many alias expansions (more than ${MAX_ALIAS_COUNT}; an alias bomb?)`
        : `${file}: invalid YAML: ${(e as Error).name}`;
    return { raw: {}, issues: [{ path: '', message }] };
  }
  if (value === null || value === undefined) return { raw: {}, issues: [] };
  if (!isRecord(value)) {
    return {
      raw: {},
      issues: [{ path: '', message: `${file}: must be a YAML mapping of keys, got ${kind(value)}` }],
    };
  }
  return { raw: value, issues: [] };
}

function readText(file: string, readFile: (path: string) => string): { text?: string; issue?: ConfigIssue } {
  try {
    return { text: readFile(file) };
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code ?? (e as Error).message;
    return { issue: { path: '', message: `cannot read config file ${file}: ${code}` } };
  }
}

/** Parses SHARD / SHARDS; a bad value is an issue named after the variable. */
function envInt(env: Env, name: string, min: number, issues: ConfigIssue[]): number | undefined {
  const text = env[name];
  if (!present(text)) return undefined;
  const trimmed = text.trim();
  if (!/^\d+$/.test(trimmed) || Number(trimmed) < min) {
    issues.push({ path: name, message: `must be an integer >= ${min}, got ${JSON.stringify(trimmed)}` });
    return undefined;
  }
  return Number(trimmed);
}

/**
 * Applies the environment to the raw document (in place). Returns which paths it filled, so that a message about
 * a value that came from the environment says so.
 */
function applyEnv(raw: Record<string, unknown>, env: Env, issues: ConfigIssue[]): Map<string, string> {
  const filled = new Map<string, string>();
  if (raw.api === undefined) raw.api = {};
  const api = raw.api;
  if (isRecord(api)) {
    const url = env.CDN_API_URL;
    if (api.base_url === undefined && present(url)) {
      api.base_url = url.trim();
      filled.set('api.base_url', 'CDN_API_URL');
    }
    const hasLogin = ['username', 'password', 'password_file'].some((k) => api[k] !== undefined);
    const token = env.CDN_API_TOKEN;
    if (api.token === undefined && api.token_file === undefined && !hasLogin && present(token)) {
      api.token = token;
      filled.set('api.token', 'CDN_API_TOKEN');
    }
    // A login from the environment fills only a place the file leaves without any credential.
    const username = env.CDN_API_USERNAME;
    if (
      api.username === undefined &&
      api.token === undefined &&
      api.token_file === undefined &&
      present(username)
    ) {
      api.username = username.trim();
      filled.set('api.username', 'CDN_API_USERNAME');
    }
    const password = env.CDN_API_PASSWORD;
    if (
      api.password === undefined &&
      api.password_file === undefined &&
      api.username !== undefined &&
      api.token === undefined &&
      api.token_file === undefined &&
      password !== undefined &&
      password !== ''
    ) {
      api.password = password;
      filled.set('api.password', 'CDN_API_PASSWORD');
    }
  }
  const accounts = env.CDN_ACCOUNTS;
  if (raw.accounts === undefined && present(accounts)) {
    const names = accounts
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s !== '');
    raw.accounts = names.map((name) => ({ name }));
    filled.set('accounts', 'CDN_ACCOUNTS');
  }
  const shard = envInt(env, 'SHARD', 0, issues);
  const shards = envInt(env, 'SHARDS', 1, issues);
  if (shard !== undefined || shards !== undefined) {
    if (raw.sharding === undefined) raw.sharding = {};
    if (isRecord(raw.sharding)) {
      if (shard !== undefined) {
        raw.sharding.shard = shard;
        filled.set('sharding.shard', 'SHARD');
      }
      if (shards !== undefined) {
        raw.sharding.shards = shards;
        filled.set('sharding.shards', 'SHARDS');
      }
    }
  }
  return filled;
}

function noteSource(issue: ConfigIssue, filled: Map<string, string>): ConfigIssue {
  for (const [path, variable] of filled) {
    if (issue.path === path || issue.path.startsWith(`${path}[`) || issue.path.startsWith(`${path}.`)) {
      return { path: issue.path, message: `${issue.message} (from ${variable})` };
    }
  }
  return issue;
}

/** Reads, merges and validates the configuration; throws ConfigError listing every problem. */
export function loadConfig(options: LoadOptions): Config {
  const { file, env } = options;
  const issues: ConfigIssue[] = [];
  let raw: Record<string, unknown> = {};
  if (file !== undefined) {
    const { text, issue } = readText(file, options.readFile ?? ((p) => readFileSync(p, 'utf8')));
    if (issue) throw new ConfigError([issue], file);
    const parsed = parseYaml(text ?? '', file);
    if (parsed.issues.length > 0) throw new ConfigError(parsed.issues, file);
    raw = parsed.raw;
  }
  // A section whose keys are all commented out (`dvr:` alone) is null in YAML: the same as leaving it out.
  for (const key of [
    'api',
    'metrics',
    'dvr',
    'recordings',
    'sharding',
    'accounts',
    'accounts_discovery',
    'remote_write',
  ]) {
    if (raw[key] === null) delete raw[key];
  }
  const filled = applyEnv(raw, env, issues);
  const result = fileSchema.safeParse(raw, { reportInput: true });
  if (!result.success) issues.push(...result.error.issues.flatMap(fromZod));
  issues.push(...crossCheck(raw));
  if (issues.length > 0 || !result.success) {
    throw new ConfigError(
      issues.map((i) => noteSource(i, filled)),
      file,
    );
  }
  return toConfig(result.data, options.hostname);
}
