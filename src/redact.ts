/**
 * The one redaction module, with its one marker. The CDN token must never reach a page, a log line, an error
 * message or a printed configuration. Upstream error strings (an API's `description`, a library's message with a
 * URL in it) are passed through `redactSecrets` before anything shows them; the HTTP client scrubs its own token
 * from what an upstream echoes; the logger censors token-bearing fields; `check-config` prints tokens and the
 * credentials of a base URL as the marker.
 */

export const REDACTED = '<redacted>';

/** Tokens shorter than this are not searched for: replacing 1-3 characters everywhere would garble every page. */
const MIN_SECRET_LENGTH = 4;

function variants(secret: string): string[] {
  const out = new Set([secret]);
  // A token can travel inside a URL or a form (query string, an echoed request) in its encoded forms.
  out.add(encodeURIComponent(secret));
  out.add(encodeURIComponent(secret).replace(/%20/g, '+'));
  out.add(JSON.stringify(secret).slice(1, -1));
  return [...out];
}

/**
 * `text` with every occurrence of each secret (verbatim, URL-encoded or JSON-escaped) replaced by REDACTED.
 * Longest secrets first, so a secret that contains another is replaced whole.
 */
export function redactSecrets(text: string, secrets: Iterable<string>): string {
  const all: string[] = [];
  for (const s of secrets) {
    if (typeof s === 'string' && s.length >= MIN_SECRET_LENGTH) all.push(...variants(s));
  }
  all.sort((a, b) => b.length - a.length);
  let out = text;
  for (const s of all) {
    if (out.includes(s)) out = out.split(s).join(REDACTED);
  }
  return out;
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
