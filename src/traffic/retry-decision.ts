/**
 * What a failed traffic request means for the next one: the one classification of failure kinds that the first
 * reads (./walker.ts) and the revisits of late data (./revisit.ts) both follow. Each caller keeps its own
 * consequence (a first read splits its window or skips it; a revisit merges fewer windows or gives up and keeps
 * what the first read counted), but which kind calls for which is decided here only.
 */
import type { ErrorKind } from '../http/errors.js';
import type { BackoffPolicy } from '../poll/backoff.js';

/** Retries of a failed traffic window, by the exporter and by backfill: 1 s doubling to 2 min, full jitter. */
export const TRAFFIC_BACKOFF: BackoffPolicy = { baseMs: 1000, capMs: 120_000 };
/** Probing while the API refuses the token: 1 min doubling to 10 min. */
export const AUTH_BACKOFF: BackoffPolicy = { baseMs: 60_000, capMs: 600_000 };

/** The kinds of src/http's ApiError, and `configuration` (a token file that cannot be read: nothing was sent). */
export type FailureKind = ErrorKind | 'configuration';

/** What a caller needs to know of a failed request (src/http's ApiError and config/token's TokenError have it). */
export interface RequestFailure {
  kind: FailureKind;
  status?: number;
  retryAfterMs?: number;
  description?: string;
  message: string;
}

/** Anything a request rejected with, as a failure: one without a kind is taken for a network failure. */
export function asFailure(err: unknown): RequestFailure {
  if (
    err &&
    typeof err === 'object' &&
    'kind' in err &&
    typeof (err as { kind: unknown }).kind === 'string'
  ) {
    return err as RequestFailure;
  }
  return { kind: 'network', message: err instanceof Error ? err.message : String(err) };
}

export type RetryDecision =
  /** 429: flow control, not a failure of the account: wait for Retry-After (else the backoff), then the same. */
  | 'wait'
  /** 504, or an answer over api.max_body_bytes: the request asked for too much at once; ask for less. */
  | 'ask-less'
  /** 401/403: the token is refused: read it again and retry on the slow auth backoff. */
  | 'token-refused'
  /** 422: the API rejects these minutes; asking again would stop the account for good: give them up. */
  | 'give-up'
  /** Nothing was sent (the token file cannot be read): retry with backoff; not a failure of the API. */
  | 'not-sent'
  /** A failure that may pass (5xx, network, malformed answer, other 4xx): retry the same with backoff. */
  | 'backoff';

export function retryDecision(failure: Pick<RequestFailure, 'kind' | 'status'>): RetryDecision {
  const kind = failure.kind;
  switch (kind) {
    case 'rate-limited':
      return 'wait';
    case 'timeout':
    case 'too_large':
      return 'ask-less';
    case 'auth':
      return 'token-refused';
    case 'invalid':
      return failure.status === 422 ? 'give-up' : 'backoff';
    case 'configuration':
      return 'not-sent';
    case 'server':
    case 'network':
    case 'malformed':
      return 'backoff';
    default: {
      // A new kind without a decision fails the type check here. At run time, a thrown object with a kind of
      // its own (asFailure keeps it) is retried as any failure that may pass.
      const _never: never = kind;
      return 'backoff';
    }
  }
}
