/**
 * The traffic API echoes the request in its answer (`start`, `end`, `account`: "start of the requested period").
 * An answer whose echo differs from what was asked was computed for another request: counting its figures as the
 * window asked for would break exactly-once, and labelling them with the account asked for would misattribute
 * them. Such an answer is `malformed`: counted as a parse error of the metrics API, logged, the window retried.
 * An answer that does not echo a field is taken as answering what was asked (the document shows the echo; some
 * upstreams may leave it out).
 */
import { malformed } from '../http/parse.js';

export interface AskedWindow {
  account?: string;
  /** Epoch ms. */
  start?: number;
  end?: number;
}

export interface EchoedWindow {
  /** The echoed account as sent (undefined when absent or not a string). */
  account?: unknown;
  start?: number;
  end?: number;
}

const iso = (ms: number) => new Date(ms).toISOString().slice(0, 16);

/** Throws ApiError `malformed` naming every echoed field that differs from the request. */
export function checkEcho(asked: AskedWindow, echoed: EchoedWindow): void {
  const wrong: string[] = [];
  for (const key of ['start', 'end'] as const) {
    const a = asked[key];
    const e = echoed[key];
    if (a !== undefined && e !== undefined && a !== e) wrong.push(`${key} ${iso(e)} (asked ${iso(a)})`);
  }
  if (asked.account !== undefined && typeof echoed.account === 'string' && echoed.account !== asked.account) {
    wrong.push(`account ${JSON.stringify(echoed.account)} (asked ${JSON.stringify(asked.account)})`);
  }
  if (wrong.length > 0)
    throw malformed('metrics', `the answer is for another request: it echoes ${wrong.join(', ')}`);
}
