/**
 * Hand-made traffic answers for TrafficHistory's tests: a record of one resource with its edge requests, 5xx and
 * bandwidth, and an answer of records.
 */
import type { TrafficRecord, TrafficResponse } from '../../src/traffic/response.js';

export function rec(resource: string, requests: number, bits: number, errors = 0): TrafficRecord {
  return {
    resource,
    resourceName: `name-${resource}`,
    edge: {
      codes: new Map(),
      classes: new Map([
        ['2xx', requests - errors],
        ['5xx', errors],
      ]),
      requests,
      requestTimeSeconds: new Map(),
      bandwidthBitsPerSecond: bits,
    },
    origin: { codes: new Map(), classes: new Map(), requestTimeSeconds: new Map() },
  };
}

export function answer(...records: TrafficRecord[]): TrafficResponse {
  return { account: 'a', metrics: [], issues: [], unknownKeys: [], records };
}
