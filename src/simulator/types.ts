/**
 * The simulator's shared contract. server.ts (HTTP, faults, rate limit, request log, traffic API) mounts the
 * routers that dvr.ts and recorder.ts build from a SimContext; each API does its own auth, since each documents
 * its own error shape.
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
  streamName: string;
  /** SP URL; source_domain and source_path are derived from it. */
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
  /** As the inventory lists it (default `active`); a test may deactivate an account. */
  status?: string;
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

/** Built by dvr.ts (`createDvrSim(ctx)`); mounted at /app/dvr-net/v1. Tests drive its state through the methods. */
export interface DvrSim {
  router: Router;
  setAlive(account: string, stream: string, alive: boolean): void;
  /** Hosts on which the next DELETE fails (500 with `failed_hosts`); empty to clear. */
  failDeletesOn(hosts: string[]): void;
  /** The stream is gone (removed at the CDN): from now on it is an unknown stream, 404. */
  removeStream(account: string, stream: string): void;
}

/** Built by recorder.ts (`createRecorderSim(ctx)`); mounted at /app/recorder-cloud/v1. */
export interface RecorderSim {
  router: Router;
  /** Forces a setting's status (for example `error`). */
  setStatus(account: string, id: string, status: 'wait' | 'progress' | 'finish' | 'error'): void;
}
