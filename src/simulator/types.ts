/**
 * The simulator's shared contract. server.ts (HTTP, auth, faults, rate limit, request log, traffic API) mounts
 * the routers of dvr.ts and recorder.ts; both receive a SimContext.
 */
import type { Router } from 'express';
import type { Clock } from '../clock.js';

export interface SimResource {
  id: string;
  name: string;
  cname: string;
}

export interface SimDvrStream {
  /** May contain a slash: `live/main`. */
  name: string;
  hosts: string[];
  /** Alive at start (default true). A stream that is not alive does not grow its ranges. */
  alive?: boolean;
  /** DVR depth in seconds (default 3600). */
  window?: number;
  /** Whether DVR is enabled (default true). */
  enabled?: boolean;
  /** Seconds between injected recording breaks, per host (default: none). Deterministic from the seed. */
  breakEverySec?: number;
}

export interface SimRecordingSeed {
  /** Stream name and SP URL; the rest take the documented defaults. */
  streamName: string;
  source: string;
  streamType: 'short' | 'long';
  launchType: 'stream_start' | 'button' | 'schedule';
  resourceId?: string;
  /** Initial status (default `wait`). */
  status?: 'wait' | 'progress' | 'finish' | 'error';
}

export interface SimAccount {
  name: string;
  token: string;
  resources: SimResource[];
  streams: SimDvrStream[];
  recordings: SimRecordingSeed[];
}

export interface SimContext {
  clock: Clock;
  seed: number;
  /** Account name to account. */
  accounts: ReadonlyMap<string, SimAccount>;
  /** The account names a token may access; undefined for an unknown token. */
  accountsForToken(token: string): readonly string[] | undefined;
}

export type SimRouterFactory = (ctx: SimContext) => Router & { reset?: () => void };
