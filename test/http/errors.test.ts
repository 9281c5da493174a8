/**
 * The API clients' one error type (src/http/errors.ts), as pollers, the gate and the pages read it: the kind of each
 * HTTP status and whether it is retried, decided on the structured error and never on its text; one message and
 * one line for logs and pages that never carry a secret, whatever the upstream echoed; a parser's `malformed`
 * error given the status and endpoint of the answer it came from. Retry-After: request.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { LoginError } from '../../src/auth/login-error.js';
import { TokenError } from '../../src/config/token.js';
import {
  ApiError,
  describeError,
  type ErrorKind,
  isApiError,
  isRefusal,
  kindForStatus,
  parseAnswer,
} from '../../src/http/errors.js';
import { SECRETS } from '../../src/redact.js';

describe('kindForStatus and retryable', () => {
  it('sorts every non-2xx status into the kind the docs name, and retries only what waiting can fix', () => {
    const kinds = Object.fromEntries(
      [301, 400, 401, 403, 404, 409, 422, 429, 500, 502, 503, 504, 599].map((s) => [s, kindForStatus(s)]),
    );
    expect(kinds).toEqual({
      301: 'invalid',
      400: 'invalid',
      401: 'auth',
      403: 'auth',
      404: 'invalid',
      409: 'invalid',
      422: 'invalid',
      429: 'rate-limited',
      500: 'server',
      502: 'server',
      503: 'server',
      504: 'timeout',
      599: 'server',
    });
    const retried = (kind: ErrorKind) => new ApiError({ api: 'metrics', kind }).retryable;
    expect(
      (['rate-limited', 'server', 'timeout', 'network', 'malformed', 'too_large'] as const).every(retried),
    ).toBe(true);
    expect((['auth', 'invalid'] as const).some(retried)).toBe(false);
  });
});

describe('ApiError', () => {
  it('says which API, where, what status and kind, and the API’s own words, in one message', () => {
    const e = new ApiError({
      api: 'dvr-net',
      kind: 'server',
      status: 502,
      endpoint: 'GET /app/dvr-net/v1/acme/streams/live',
      description: 'upstream down',
      failedHosts: ['edge-1', 'edge-2'],
    });
    expect(e.message).toBe(
      'dvr-net GET /app/dvr-net/v1/acme/streams/live: 502 server: upstream down (failed hosts: edge-1, edge-2)',
    );
    expect(new ApiError({ api: 'metrics', kind: 'network', code: 'ECONNRESET' }).message).toBe(
      'metrics: network: ECONNRESET',
    );
    expect(isApiError(e)).toBe(true);
    expect(isApiError(new Error('x'))).toBe(false);
  });

  it('masks a secret an upstream echoed, in the message and in every text field', () => {
    const secret = 'tok-echoed-by-upstream-7731';
    SECRETS.add(secret);
    const e = new ApiError({
      api: 'recorder-cloud',
      kind: 'auth',
      status: 401,
      description: `bad token ${secret}`,
      detail: `saw ${secret}`,
      failedHosts: [`host-${secret}`],
    });
    const texts = [e.message, e.description, e.detail, ...(e.failedHosts ?? []), describeError(e)];
    for (const t of texts) expect(t).not.toContain(secret);
    expect(e.description).toContain('<redacted>');
    // Copies made with `with` stay masked.
    expect(e.with({ status: 403 }).message).not.toContain(secret);
  });

  it('keeps every field in a copy made with `with`, but what it replaces', () => {
    const e = new ApiError({
      api: 'metrics',
      kind: 'rate-limited',
      status: 429,
      endpoint: 'GET /m',
      retryAfterMs: 3000,
      description: 'slow down',
    });
    const copy = e.with({ endpoint: 'GET /n' });
    expect(copy).toMatchObject({
      api: 'metrics',
      kind: 'rate-limited',
      status: 429,
      endpoint: 'GET /n',
      retryAfterMs: 3000,
      description: 'slow down',
      retryable: true,
    });
  });
});

describe('isRefusal', () => {
  it('is a 401/403 ApiError only, decided on its kind, never on a text that says 401', () => {
    expect(isRefusal(new ApiError({ api: 'metrics', kind: 'auth', status: 403 }))).toBe(true);
    expect(
      isRefusal(new ApiError({ api: 'metrics', kind: 'invalid', status: 400, description: '401' })),
    ).toBe(false);
    expect(isRefusal(new Error('401 Unauthorized'))).toBe(false);
    // A login that cannot give a token is not an API refusing one: the login renews by itself.
    expect(isRefusal(new LoginError('monitoring@example.com', 'login-refused', '401', 401))).toBe(false);
  });
});

describe('describeError', () => {
  it('gives one line: the status (or the kind without one) and the API’s own words; other failures their kind', () => {
    expect(
      describeError(
        new ApiError({ api: 'metrics', kind: 'invalid', status: 404, description: 'No such resource' }),
      ),
    ).toBe('404: No such resource');
    expect(describeError(new ApiError({ api: 'metrics', kind: 'network', code: 'ECONNREFUSED' }))).toBe(
      'network: metrics: network: ECONNREFUSED',
    );
    expect(describeError(new TokenError('token file /run/secrets/t: does not exist'))).toBe(
      'configuration: token file /run/secrets/t: does not exist',
    );
    expect(describeError(new Error('boom'))).toBe('boom');
    expect(describeError('plain text')).toBe('plain text');
  });
});

describe('parseAnswer', () => {
  it("gives a parser's malformed error the answer's status and endpoint, and lets other errors through as they are", () => {
    const malformed = new ApiError({ api: 'metrics', kind: 'malformed', detail: 'not a JSON array' });
    let caught: unknown;
    try {
      parseAnswer(200, 'GET /m', () => {
        throw malformed;
      });
    } catch (e) {
      caught = e;
    }
    expect(caught).toBeInstanceOf(ApiError);
    expect(caught).toMatchObject({
      kind: 'malformed',
      status: 200,
      endpoint: 'GET /m',
      detail: 'not a JSON array',
    });
    const other = new RangeError('bug');
    expect(() =>
      parseAnswer(200, 'GET /m', () => {
        throw other;
      }),
    ).toThrow(other);
    expect(parseAnswer(200, 'GET /m', () => 42)).toBe(42);
  });
});
