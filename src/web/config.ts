/**
 * The web configuration file (`--web.config.file`), in the format of Prometheus' exporter-toolkit, key for key, so
 * the file an operations team writes for node_exporter works here unchanged:
 *
 *   tls_server_config:  cert_file | cert, key_file | key, client_auth_type, client_ca_file | client_ca,
 *                       client_allowed_sans, min_version, max_version, cipher_suites,
 *                       prefer_server_cipher_suites, curve_preferences
 *   http_server_config: http2, headers (only the five security headers the toolkit allows)
 *   basic_auth_users:   user -> bcrypt hash
 *   rate_limit:         interval (Go duration), burst
 *
 * Parsing is strict like the toolkit's `yaml.UnmarshalStrict`: an unknown key, a duplicate key or a value of the
 * wrong kind is an error naming its path. Defaults are the toolkit's: min_version TLS12, max_version TLS13,
 * prefer_server_cipher_suites true, http2 true, client_auth_type NoClientCert. Relative file names are resolved
 * against the directory of the web config file (the toolkit's `SetDirectory`).
 *
 * The toolkit's YAML library (yaml.v2) reads a number or a boolean into a string field as its text
 * (`X-XSS-Protection: 1`) and takes YAML 1.1 booleans (`yes`, `on`, ...); both are accepted here too.
 * Secrets (the inline `key`, the bcrypt hashes) are never echoed in a message.
 */
import { dirname, isAbsolute, resolve } from 'node:path';
import { parseDocument } from 'yaml';
import { z } from 'zod';

export interface WebConfigIssue {
  path: string;
  message: string;
}

/** A web config file that cannot be used; the message names the file and each key at fault. */
export class WebConfigError extends Error {
  readonly issues: readonly WebConfigIssue[];

  constructor(issues: WebConfigIssue[], file?: string) {
    const where = file ? ` (${file})` : '';
    const lines = issues.map((i) => `  ${i.path ? `${i.path}: ` : ''}${i.message}`);
    super(`invalid web config${where}:\n${lines.join('\n')}`);
    this.name = 'WebConfigError';
    this.issues = issues;
  }
}

export const CLIENT_AUTH_TYPES = [
  'NoClientCert',
  'RequestClientCert',
  'RequireAnyClientCert',
  'VerifyClientCertIfGiven',
  'RequireAndVerifyClientCert',
] as const;
export type ClientAuthType = (typeof CLIENT_AUTH_TYPES)[number];

/** Go's names; "RequireClientCert" is the toolkit's old spelling of RequireAnyClientCert, kept by it and here. */
const CLIENT_AUTH_ALIASES: Record<string, ClientAuthType> = { RequireClientCert: 'RequireAnyClientCert' };

export const TLS_VERSIONS = ['TLS10', 'TLS11', 'TLS12', 'TLS13'] as const;
export type TlsVersionName = (typeof TLS_VERSIONS)[number];

/**
 * The cipher suites Go's `tls.CipherSuites()` lists (the ones the toolkit accepts), with OpenSSL's name for each.
 * TLS 1.3 suites map to null: Go does not let them be configured (all three are always on) and neither do we.
 */
export const CIPHER_SUITES: Readonly<Record<string, string | null>> = {
  TLS_RSA_WITH_AES_128_CBC_SHA: 'AES128-SHA',
  TLS_RSA_WITH_AES_256_CBC_SHA: 'AES256-SHA',
  TLS_RSA_WITH_AES_128_GCM_SHA256: 'AES128-GCM-SHA256',
  TLS_RSA_WITH_AES_256_GCM_SHA384: 'AES256-GCM-SHA384',
  TLS_AES_128_GCM_SHA256: null,
  TLS_AES_256_GCM_SHA384: null,
  TLS_CHACHA20_POLY1305_SHA256: null,
  TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA: 'ECDHE-ECDSA-AES128-SHA',
  TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA: 'ECDHE-ECDSA-AES256-SHA',
  TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA: 'ECDHE-RSA-AES128-SHA',
  TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA: 'ECDHE-RSA-AES256-SHA',
  TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256: 'ECDHE-ECDSA-AES128-GCM-SHA256',
  TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384: 'ECDHE-ECDSA-AES256-GCM-SHA384',
  TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256: 'ECDHE-RSA-AES128-GCM-SHA256',
  TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384: 'ECDHE-RSA-AES256-GCM-SHA384',
  TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256: 'ECDHE-ECDSA-CHACHA20-POLY1305',
  TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256: 'ECDHE-RSA-CHACHA20-POLY1305',
};

/** The toolkit's curve names, with OpenSSL's. */
export const CURVES: Readonly<Record<string, string>> = {
  CurveP256: 'P-256',
  CurveP384: 'P-384',
  CurveP521: 'P-521',
  X25519: 'X25519',
};

/**
 * The only headers the toolkit lets a file add, with the values allowed when the set is closed. Kept private to
 * the toolkit "to ensure consistency in the Prometheus ecosystem"; the same list here.
 */
export const ALLOWED_HEADERS: Readonly<Record<string, readonly string[] | null>> = {
  'Strict-Transport-Security': null,
  'X-Content-Type-Options': ['nosniff'],
  'X-Frame-Options': ['deny', 'sameorigin'],
  'X-XSS-Protection': null,
  'Content-Security-Policy': null,
};

export interface TlsServerConfig {
  cert?: string;
  key?: string;
  clientCa?: string;
  /** Absolute paths. */
  certFile?: string;
  keyFile?: string;
  clientCaFile?: string;
  clientAuthType: ClientAuthType;
  /** Undefined: no SAN check. */
  clientAllowedSans?: string[];
  minVersion: TlsVersionName;
  maxVersion: TlsVersionName;
  /** Go names, as written. */
  cipherSuites: string[];
  preferServerCipherSuites: boolean;
  /** Go names, as written. */
  curvePreferences: string[];
}

export interface WebConfig {
  /** Undefined: plain HTTP (no TLS key present, the toolkit's `IsEnabled`). */
  tls?: TlsServerConfig;
  http2: boolean;
  headers: Record<string, string>;
  /** user -> bcrypt hash; empty: no basic auth. */
  users: Map<string, string>;
  /** Undefined: no rate limit (interval 0). */
  rateLimit?: { intervalMs: number; burst: number };
}

// --- YAML values the way yaml.v2 reads them --------------------------------------------------------------------

const YAML11_TRUE = new Set(['y', 'Y', 'yes', 'Yes', 'YES', 'on', 'On', 'ON', 'true', 'True', 'TRUE']);
const YAML11_FALSE = new Set(['n', 'N', 'no', 'No', 'NO', 'off', 'Off', 'OFF', 'false', 'False', 'FALSE']);

/** A string field: any scalar, as its text; null (an empty value) is unset. */
const str = z.preprocess(
  (v) => (v === null ? undefined : typeof v === 'number' || typeof v === 'boolean' ? String(v) : v),
  z.string({ error: (i) => `must be a string, got ${kindOf(i.input)}` }).optional(),
);
const bool = z.preprocess(
  (v) =>
    v === null
      ? undefined
      : typeof v === 'string' && YAML11_TRUE.has(v)
        ? true
        : YAML11_FALSE.has(String(v))
          ? false
          : v,
  z.boolean({ error: (i) => `must be true or false, got ${kindOf(i.input)}` }).optional(),
);
const list = z.preprocess(
  (v) => (v === null ? undefined : v),
  z
    .array(str.pipe(z.string({ error: 'must be a string, got null' })), {
      error: (i) => `must be a list, got ${kindOf(i.input)}`,
    })
    .optional(),
);
/** A mapping section; null (`tls_server_config:` with nothing under it) is the empty mapping, as in Go. */
const section = <T extends z.ZodRawShape>(shape: T) =>
  z.preprocess(
    (v) => (v === null ? undefined : v),
    z.strictObject(shape, { error: (i) => `must be a mapping, got ${kindOf(i.input)}` }).optional(),
  );

function kindOf(v: unknown): string {
  if (v === undefined) return 'nothing';
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'a list';
  if (typeof v === 'object') return 'a mapping';
  if (typeof v === 'string') return 'a string';
  return String(v);
}

const fileSchema = z.strictObject(
  {
    tls_server_config: section({
      cert: str,
      key: str,
      client_ca: str,
      cert_file: str,
      key_file: str,
      client_auth_type: str,
      client_ca_file: str,
      client_allowed_sans: list,
      min_version: str,
      max_version: str,
      cipher_suites: list,
      prefer_server_cipher_suites: bool,
      curve_preferences: list,
    }),
    http_server_config: section({
      http2: bool,
      headers: z.preprocess(
        (v) => (v === null ? undefined : v),
        z.record(z.string(), str, { error: (i) => `must be a mapping, got ${kindOf(i.input)}` }).optional(),
      ),
    }),
    rate_limit: section({
      interval: z.preprocess(
        (v) => (v === null ? undefined : v),
        z
          .union([z.string(), z.number()], { error: (i) => `must be a duration, got ${kindOf(i.input)}` })
          .optional(),
      ),
      burst: z.preprocess(
        (v) => (v === null ? undefined : v),
        z.int({ error: (i) => `must be an integer, got ${kindOf(i.input)}` }).optional(),
      ),
    }),
    basic_auth_users: z.preprocess(
      (v) => (v === null ? undefined : v),
      z
        .record(
          z.string(),
          // Never echo a value here: it is a password hash.
          z.preprocess(
            (v) => (typeof v === 'number' || typeof v === 'boolean' ? String(v) : v),
            z.string({ error: 'must be a bcrypt hash (a string)' }),
          ),
          { error: (i) => `must be a mapping of user to bcrypt hash, got ${kindOf(i.input)}` },
        )
        .optional(),
    ),
  },
  { error: (i) => `the file must be a YAML mapping, got ${kindOf(i.input)}` },
);

function pathText(path: readonly PropertyKey[]): string {
  return path
    .map((p) => (typeof p === 'number' ? `[${p}]` : String(p)))
    .join('.')
    .replace(/\.\[/g, '[');
}

function fromZod(issue: z.core.$ZodIssue): WebConfigIssue[] {
  const path = pathText(issue.path);
  if (issue.code === 'unrecognized_keys') {
    return issue.keys.map((k) => ({ path: path ? `${path}.${k}` : k, message: 'unknown key' }));
  }
  return [{ path, message: issue.message }];
}

// --- Go durations (rate_limit.interval) ---------------------------------------------------------------------------

const GO_UNITS: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3,
  μs: 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

/** Go's `time.ParseDuration` (`1s`, `1.5m`, `1h30m`, `300ms`, `0`), in milliseconds; undefined if not one. */
export function parseGoDuration(text: string): number | undefined {
  if (text === '0') return 0;
  const re = /(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)/y;
  let at = 0;
  let total = 0;
  if (text.length === 0) return undefined;
  while (at < text.length) {
    re.lastIndex = at;
    const m = re.exec(text);
    if (!m) return undefined;
    total += Number(m[1]) * GO_UNITS[m[2]!]!;
    at = re.lastIndex;
  }
  return total;
}

// --- bcrypt hashes ---------------------------------------------------------------------------------------------------

/** `$2a$`, `$2b$`, `$2x$`, `$2y$` (htpasswd writes 2y) with cost 4..31: what Go's `bcrypt.Cost` accepts. */
const BCRYPT = /^\$2[abxy]?\$(\d\d)\$[./A-Za-z0-9]{53}$/;

export function bcryptCost(hash: string): number | undefined {
  const m = BCRYPT.exec(hash);
  if (!m) return undefined;
  const cost = Number(m[1]);
  return cost >= 4 && cost <= 31 ? cost : undefined;
}

// --- the whole file ---------------------------------------------------------------------------------------------------

/**
 * Parses and checks a web config file's text. `file` is its path: relative file names inside are resolved against
 * its directory. Checks everything that needs no file system; `loadTlsMaterial` (tls.ts) reads the files.
 * Throws WebConfigError listing every problem found.
 */
export function parseWebConfig(text: string, file: string): WebConfig {
  const issues: WebConfigIssue[] = [];
  const doc = parseDocument(text, { uniqueKeys: true, prettyErrors: true });
  if (doc.errors.length > 0) {
    // Position only: the parser's message may quote the source, which may hold a key or a hash.
    throw new WebConfigError(
      doc.errors.map((e) => {
        const pos = e.linePos?.[0];
        return {
          path: '',
          message: `YAML error (${e.code})${pos ? ` at line ${pos.line}, column ${pos.col}` : ''}`,
        };
      }),
      file,
    );
  }
  const raw = doc.toJS() ?? {};
  const parsed = fileSchema.safeParse(raw);
  if (!parsed.success) throw new WebConfigError(parsed.error.issues.flatMap(fromZod), file);
  const data = parsed.data;
  const dir = dirname(resolve(file));
  const at = (p: string | undefined): string | undefined =>
    p === undefined || p === '' ? undefined : isAbsolute(p) ? p : resolve(dir, p);

  let tls: TlsServerConfig | undefined;
  const t = data.tls_server_config ?? {};
  // The toolkit's IsEnabled: any of these set turns TLS on (and then cert and key are required).
  const enabled = [
    t.cert_file,
    t.cert,
    t.key_file,
    t.key,
    t.client_ca_file,
    t.client_ca,
    t.client_auth_type,
  ].some((v) => v !== undefined && v !== '');
  const p = 'tls_server_config';
  if (enabled) {
    if (!t.cert_file && !t.cert)
      issues.push({ path: `${p}.cert_file`, message: 'missing one of cert or cert_file' });
    if (!t.key_file && !t.key)
      issues.push({ path: `${p}.key_file`, message: 'missing one of key or key_file' });
  }
  let clientAuthType: ClientAuthType = 'NoClientCert';
  const cat = t.client_auth_type ?? '';
  if (cat !== '') {
    const known = CLIENT_AUTH_ALIASES[cat] ?? (CLIENT_AUTH_TYPES as readonly string[]).find((c) => c === cat);
    if (known) clientAuthType = known as ClientAuthType;
    else
      issues.push({
        path: `${p}.client_auth_type`,
        message: `invalid ClientAuth ${JSON.stringify(cat)}: must be one of ${CLIENT_AUTH_TYPES.join(', ')}`,
      });
  }
  if ((t.client_ca_file || t.client_ca) && clientAuthType === 'NoClientCert') {
    issues.push({
      path: `${p}.client_auth_type`,
      message: "client CA's have been configured without a Client Auth Policy (set client_auth_type)",
    });
  }
  const version = (key: 'min_version' | 'max_version', fallback: TlsVersionName): TlsVersionName => {
    const v = t[key];
    if (v === undefined || v === '') return fallback;
    if ((TLS_VERSIONS as readonly string[]).includes(v)) return v as TlsVersionName;
    issues.push({
      path: `${p}.${key}`,
      message: `unknown TLS version ${JSON.stringify(v)} (${TLS_VERSIONS.join(', ')})`,
    });
    return fallback;
  };
  const minVersion = version('min_version', 'TLS12');
  const maxVersion = version('max_version', 'TLS13');
  if (TLS_VERSIONS.indexOf(minVersion) > TLS_VERSIONS.indexOf(maxVersion)) {
    issues.push({ path: `${p}.min_version`, message: `${minVersion} is above max_version ${maxVersion}` });
  }
  const cipherSuites = t.cipher_suites ?? [];
  cipherSuites.forEach((c, i) => {
    if (!(c in CIPHER_SUITES))
      issues.push({ path: `${p}.cipher_suites[${i}]`, message: `unknown cipher ${c}` });
  });
  const curvePreferences = t.curve_preferences ?? [];
  curvePreferences.forEach((c, i) => {
    if (!(c in CURVES)) {
      issues.push({
        path: `${p}.curve_preferences[${i}]`,
        message: `unknown curve ${c} (${Object.keys(CURVES).join(', ')})`,
      });
    }
  });
  const http2 = data.http_server_config?.http2 ?? true;
  // Go's HTTP/2 server refuses a TLS 1.2 cipher list without the suite RFC 7540 makes mandatory; so does the toolkit.
  if (
    enabled &&
    http2 &&
    cipherSuites.length > 0 &&
    TLS_VERSIONS.indexOf(minVersion) < TLS_VERSIONS.indexOf('TLS13') &&
    !cipherSuites.some(
      (c) => c === 'TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256' || c === 'TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256',
    )
  ) {
    issues.push({
      path: `${p}.cipher_suites`,
      message:
        'HTTP/2 needs TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 or TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256 (add one, or set http_server_config.http2: false)',
    });
  }
  if (enabled) {
    tls = {
      clientAuthType,
      minVersion,
      maxVersion,
      cipherSuites,
      preferServerCipherSuites: t.prefer_server_cipher_suites ?? true,
      curvePreferences,
    };
    if (t.cert) tls.cert = t.cert;
    if (t.key) tls.key = t.key;
    if (t.client_ca) tls.clientCa = t.client_ca;
    const certFile = at(t.cert_file);
    const keyFile = at(t.key_file);
    const clientCaFile = at(t.client_ca_file);
    if (certFile) tls.certFile = certFile;
    if (keyFile) tls.keyFile = keyFile;
    if (clientCaFile) tls.clientCaFile = clientCaFile;
    if (t.client_allowed_sans !== undefined) tls.clientAllowedSans = t.client_allowed_sans;
  }

  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(data.http_server_config?.headers ?? {})) {
    const path = `http_server_config.headers.${name}`;
    if (!(name in ALLOWED_HEADERS)) {
      issues.push({
        path,
        message: `HTTP header ${JSON.stringify(name)} can not be configured (allowed: ${Object.keys(ALLOWED_HEADERS).join(', ')})`,
      });
      continue;
    }
    const allowed = ALLOWED_HEADERS[name];
    const v = value ?? '';
    if (allowed && !allowed.includes(v)) {
      issues.push({
        path,
        message: `invalid value: expected one of ${allowed.join(', ')}, got ${JSON.stringify(v)}`,
      });
      continue;
    }
    // "Unset if blank."
    if (v !== '') headers[name] = v;
  }

  const users = new Map<string, string>();
  for (const [user, hash] of Object.entries(data.basic_auth_users ?? {})) {
    if (bcryptCost(hash) === undefined) {
      issues.push({
        path: `basic_auth_users.${user}`,
        message: 'not a bcrypt hash (make one with htpasswd -nBC 10 "")',
      });
    } else users.set(user, hash);
  }

  let rateLimit: WebConfig['rateLimit'];
  const rl = data.rate_limit;
  if (rl) {
    const interval = rl.interval ?? 0;
    const ms = typeof interval === 'number' ? interval / 1e6 : parseGoDuration(interval);
    if (ms === undefined || ms < 0) {
      issues.push({
        path: 'rate_limit.interval',
        message: `not a duration: ${JSON.stringify(interval)} (e.g. 1s, 500ms)`,
      });
    } else if (ms > 0) {
      const burst = rl.burst ?? 0;
      if (burst < 0) issues.push({ path: 'rate_limit.burst', message: `must be at least 0, got ${burst}` });
      rateLimit = { intervalMs: ms, burst };
    }
  }

  if (issues.length > 0) throw new WebConfigError(issues, file);
  const out: WebConfig = { http2, headers, users };
  if (tls) out.tls = tls;
  if (rateLimit) out.rateLimit = rateLimit;
  return out;
}
