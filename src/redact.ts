/**
 * The one redaction module, with its one marker. No secret (the CDN tokens now; passwords and issued login tokens
 * once logins exist) may reach a page, a log line, an error message, a metric label or a printed configuration, even
 * when an upstream echoes it back in some encoding.
 *
 * `SECRETS` is the registry of every secret in use: whoever reads one registers it (`SECRETS.add(value)`: the token
 * sources do on every read). Its `redact` is applied at the edges: every log line as written (src/log.ts), the
 * landing page and /readyz (src/server), label values entering the series store (src/store/family.ts), error texts
 * (src/http/errors.ts), `check-config`'s output.
 *
 * What is masked: any stretch of at least 8 characters taken from a secret in one of its encoded forms (as is,
 * URL-encoded, JSON-escaped, base64 and base64url at each of the three alignments inside a longer blob). So a
 * parser quoting the token's first 10 characters is masked too. A secret shorter than 8 characters is masked only
 * whole (4 or more characters; shorter ones are not searched for: they would garble every page).
 *
 * Speed: the forms' 8-character slices are kept in one Set, and a rolling hash of each slice in a bit table; a
 * text is scanned once, rolling the hash of its 8-character windows, and only a window whose hash bit is set is
 * cut out and looked up. A text shorter than 8 characters is never looked at (bench/redact.ts measures it).
 */

export const REDACTED = '<redacted>';

/** Secrets shorter than this are not searched for: replacing 1-3 characters everywhere would garble every page. */
const MIN_SECRET_LENGTH = 4;
/** A stretch of a secret this long or longer is masked wherever it appears. */
export const SLICE = 8;
const BASE = 0x01000193;
/** BASE^(SLICE-1) mod 2^32: what the character leaving the window weighs. */
const TOP = (() => {
  let p = 1;
  for (let i = 1; i < SLICE; i++) p = Math.imul(p, BASE);
  return p;
})();
const TABLE_BITS = 22;
const TABLE_MASK = (1 << TABLE_BITS) - 1;

function sliceHash(s: string, from: number): number {
  let h = 0;
  for (let i = from; i < from + SLICE; i++) h = (Math.imul(h, BASE) + s.charCodeAt(i)) | 0;
  return h;
}

function base64Forms(secret: string): string[] {
  const out: string[] = [];
  const bytes = Buffer.from(secret, 'utf8');
  for (let pad = 0; pad < 3; pad++) {
    const padded = Buffer.concat([Buffer.alloc(pad, 0x20), bytes]);
    for (const enc of ['base64', 'base64url'] as const) {
      let s = padded.toString(enc).replace(/=+$/, '');
      // Characters that mix the padding's bits, or the end's, are not the secret's alone: drop them.
      if (pad > 0) s = s.slice(Math.ceil((pad * 4) / 3));
      if (padded.length % 3 !== 0) s = s.slice(0, -1);
      out.push(s);
    }
  }
  return out;
}

/** The forms a secret can travel in: as is, URL-encoded (both space styles), JSON-escaped, base64, base64url. */
export function encodedForms(secret: string): string[] {
  const out = new Set([secret]);
  out.add(encodeURIComponent(secret));
  out.add(encodeURIComponent(secret).replace(/%20/g, '+'));
  out.add(JSON.stringify(secret).slice(1, -1));
  out.add(secret.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`).replace(/&#38;/g, '&amp;'));
  for (const b of base64Forms(secret)) if (b.length >= SLICE) out.add(b);
  return [...out];
}

export class SecretRegistry {
  private readonly secrets = new Set<string>();
  /** Every SLICE-character stretch of every form. */
  private readonly slices = new Set<string>();
  /** Bit table of the slices' rolling hashes (allocated with the first secret). */
  private table: Uint32Array | undefined;
  /** Forms shorter than SLICE, matched whole, longest first. */
  private short: string[] = [];
  /** Values found clean since the last secret was added (label values repeat across families): bounded. */
  private readonly clean = new Set<string>();
  /** Texts redacted (some part masked), by where: read by the exporter's own metrics. */
  private readonly hits = new Map<string, number>();

  /** Registers a secret (idempotent; trimmed values are what the token sources hold). */
  add(secret: string): void {
    if (typeof secret !== 'string' || secret.length < MIN_SECRET_LENGTH || this.secrets.has(secret)) return;
    // A printed configuration loaded again has the marker as its token: masking the marker would garble output.
    if (REDACTED.includes(secret)) return;
    this.secrets.add(secret);
    this.clean.clear();
    this.index(secret);
  }

  /**
   * Forgets a secret no longer in use (a login token replaced by its renewal): the slices and hash table are built
   * again from the secrets left, so the registry's memory and scan cost follow the live secrets only. The cost is
   * that of adding the secrets left (each bounded in length by its source: a login token by MAX_TOKEN_LENGTH).
   */
  remove(secret: string): void {
    if (!this.secrets.delete(secret)) return;
    this.slices.clear();
    this.short = [];
    this.table = undefined;
    for (const s of this.secrets) this.index(s);
  }

  has(secret: string): boolean {
    return this.secrets.has(secret);
  }

  private index(secret: string): void {
    for (const form of encodedForms(secret)) {
      if (form.length < SLICE) {
        if (form.length >= MIN_SECRET_LENGTH && !this.short.includes(form)) this.short.push(form);
        continue;
      }
      this.table ??= new Uint32Array(1 << (TABLE_BITS - 5));
      for (let i = 0; i + SLICE <= form.length; i++) {
        this.slices.add(form.slice(i, i + SLICE));
        const bit = sliceHash(form, i) & TABLE_MASK;
        this.table[bit >>> 5]! |= 1 << (bit & 31);
      }
    }
    this.short.sort((a, b) => b.length - a.length);
  }

  get size(): number {
    return this.secrets.size;
  }

  /**
   * True when `value` holds no stretch of a secret. For label values, on the store's hot path: a value seen clean
   * is remembered (until a secret is added), so the ~70 series of one resource check its id, name and cname once.
   */
  isClean(value: string): boolean {
    if (this.secrets.size === 0 || value.length < MIN_SECRET_LENGTH || this.clean.has(value)) return true;
    if (this.contains(value)) return false;
    if (this.clean.size >= 100_000) this.clean.clear();
    this.clean.add(value);
    return true;
  }

  /** True when `text` holds a stretch of a secret that `redact` would mask. */
  contains(text: string): boolean {
    if (this.secrets.size === 0 || text.length < MIN_SECRET_LENGTH) return false;
    if (this.scan(text, undefined)) return true;
    for (const s of this.short) if (text.includes(s)) return true;
    return false;
  }

  /**
   * Rolls a hash over the 8-character windows of `text`; a window in the slice Set marks `covered` (when given) or,
   * without it, ends the scan. True when some window matched.
   */
  private scan(text: string, covered: Uint8Array | undefined): boolean {
    const table = this.table;
    if (!table || text.length < SLICE) return false;
    let found = false;
    let h = sliceHash(text, 0);
    for (let i = 0, last = text.length - SLICE; ; ) {
      const bit = h & TABLE_MASK;
      if ((table[bit >>> 5]! & (1 << (bit & 31))) !== 0 && this.slices.has(text.slice(i, i + SLICE))) {
        if (!covered) return true;
        found = true;
        covered.fill(1, i, i + SLICE);
      }
      if (i === last) return found;
      h = (Math.imul(h - Math.imul(text.charCodeAt(i), TOP), BASE) + text.charCodeAt(i + SLICE)) | 0;
      i++;
    }
  }

  /**
   * `text` with every stretch of a secret masked: each maximal run of characters covered by a matching slice (or
   * a short secret) becomes one REDACTED. `where` names the edge, for the count of redactions.
   */
  redact(text: string, where = 'other'): string {
    if (!this.contains(text)) return text;
    this.hits.set(where, (this.hits.get(where) ?? 0) + 1);
    const covered = new Uint8Array(text.length);
    this.scan(text, covered);
    for (const s of this.short) {
      for (let at = text.indexOf(s); at >= 0; at = text.indexOf(s, at + 1))
        covered.fill(1, at, at + s.length);
    }
    let out = '';
    for (let i = 0; i < text.length; ) {
      if (covered[i] === 1) {
        while (i < text.length && covered[i] === 1) i++;
        out += REDACTED;
      } else {
        const from = i;
        while (i < text.length && covered[i] !== 1) i++;
        out += text.slice(from, i);
      }
    }
    return out;
  }

  /** Counts one redaction at `where` that `redact` did not see (a caller masking piecewise). */
  count(where: string): void {
    this.hits.set(where, (this.hits.get(where) ?? 0) + 1);
  }

  /** How many texts were redacted at `where`. */
  redactions(where: string): number {
    return this.hits.get(where) ?? 0;
  }
}

/** The process's registry of secrets in use. */
export const SECRETS = new SecretRegistry();

/**
 * `text` with every secret known to SECRETS, and each of `secrets`, masked in all their forms. A secret of
 * `secrets` not in SECRETS is masked here without being registered: a token a request carried may have been
 * replaced (and dropped from SECRETS) by the time its error is written.
 */
export function redactSecrets(text: string, secrets: Iterable<string> = [], where?: string): string {
  let extra: SecretRegistry | undefined;
  for (const s of secrets) {
    if (SECRETS.has(s)) continue;
    extra ??= new SecretRegistry();
    extra.add(s);
  }
  const out = SECRETS.redact(text, where);
  if (extra === undefined || !extra.contains(out)) return out;
  SECRETS.count(where ?? 'other');
  return extra.redact(out, where);
}

/** `https://user:pw@host/x` -> `https://<redacted>@host/x`; a URL without credentials as it is. */
export function redactUrl(text: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return text;
  }
  if (url.username === '' && url.password === '') return text;
  return text.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/?#]*@/i, `$1${REDACTED}@`);
}
