/** What a failed API call gives: an ApiError, with no secret in any form a log or a page could show. */
import { expect } from 'vitest';
import { ApiError } from '../../src/http/errors.js';

/** The ApiError `p` rejects with; fails the test if `p` resolves or rejects with anything else. */
export async function apiFailure(p: Promise<unknown>): Promise<ApiError> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(ApiError);
    return err as ApiError;
  }
  throw new Error('expected the request to fail');
}

/** None of `secrets` is in the error's message, stack, JSON or string form. */
export function expectNoSecret(err: ApiError, secrets: readonly string[]): void {
  for (const s of secrets) {
    expect(err.message).not.toContain(s);
    expect(String(err.stack)).not.toContain(s);
    expect(JSON.stringify(err)).not.toContain(s);
    expect(String(err)).not.toContain(s);
  }
}
