/**
 * The one decision first reads and revisits take on a failed traffic request, from the errors the request leg
 * really throws: an ApiError per HTTP status (kinds as src/http gives them), a token file that cannot be read,
 * anything else.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FileToken } from '../../src/config/token.js';
import { ApiError, kindForStatus } from '../../src/http/errors.js';
import {
  asFailure,
  type FailureKind,
  type RetryDecision,
  retryDecision,
} from '../../src/traffic/retry-decision.js';

const decide = (err: unknown): RetryDecision => retryDecision(asFailure(err));
const answered = (status: number) => new ApiError({ api: 'metrics', kind: kindForStatus(status), status });

describe('retryDecision', () => {
  it.each([
    [429, 'wait'],
    [504, 'ask-less'],
    [401, 'token-refused'],
    [403, 'token-refused'],
    [422, 'give-up'],
    [400, 'backoff'],
    [404, 'backoff'],
    [301, 'backoff'],
    [500, 'backoff'],
    [502, 'backoff'],
    [503, 'backoff'],
  ] as const)('an HTTP %i answer: %s', (status, decision) => {
    expect(decide(answered(status))).toBe(decision);
  });

  it('has a decision for every failure kind (a kind added without one fails the type check)', () => {
    // Without a status, as src/http raises them when no answer came or the body was refused.
    const byKind: Record<FailureKind, RetryDecision> = {
      'rate-limited': 'wait',
      timeout: 'ask-less',
      too_large: 'ask-less',
      auth: 'token-refused',
      invalid: 'backoff',
      configuration: 'not-sent',
      server: 'backoff',
      network: 'backoff',
      malformed: 'backoff',
    };
    for (const [kind, decision] of Object.entries(byKind) as Array<[FailureKind, RetryDecision]>) {
      const err =
        kind === 'configuration' ? { kind, message: 'token file' } : new ApiError({ api: 'metrics', kind });
      expect([kind, decide(err)]).toEqual([kind, decision]);
    }
  });

  it('a token file that cannot be read: nothing was sent', () => {
    const dir = mkdtempSync(join(tmpdir(), 'retry-decision-'));
    try {
      const token = new FileToken(join(dir, 'missing'));
      let thrown: unknown;
      try {
        token.get();
      } catch (err) {
        thrown = err;
      }
      expect(thrown).toBeInstanceOf(Error);
      expect(decide(thrown)).toBe('not-sent');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('anything thrown without a kind is a network failure, retried with backoff', () => {
    const failure = asFailure(new TypeError('fetch failed'));
    expect(failure).toEqual({ kind: 'network', message: 'fetch failed' });
    expect(retryDecision(failure)).toBe('backoff');
    expect(decide('a string')).toBe('backoff');
  });
});
