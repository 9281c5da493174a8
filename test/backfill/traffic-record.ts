/**
 * A traffic record (src/traffic/response.ts) as the backfill's tests make their answers up: `requests` on the edge,
 * all of them 200s, and the same count at the origin without its codes.
 */
import type { TrafficRecord } from '../../src/traffic/response.js';

export function record(resource: string, requests: number): TrafficRecord {
  const side = {
    codes: new Map([['200', requests]]),
    classes: new Map(),
    requests,
    requestTimeSeconds: new Map(),
  };
  return { resource, edge: side, origin: { ...side, codes: new Map() } };
}
