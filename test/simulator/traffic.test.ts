import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  STATUS_CLASSES as CLASSES,
  STATUS_CODES as CODES,
  CODES_BY_CLASS,
  METRIC_NAMES,
  SIZE_RANGES as RANGES,
} from '../../src/api/vocabulary.js';
import { MINUTE } from '../../src/clock.js';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import { formatApiTime } from '../../src/simulator/traffic.js';
import type { SideTotals, TrafficTotals } from '../../src/simulator/traffic-model.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { startTestSimulator } from '../helpers/per-test.js';

const HOUR = 60 * MINUTE;
/** 2026-03-02T10:00:00Z: the range the window tests walk. */
const R0 = Date.UTC(2026, 2, 2, 10, 0, 0);
const NOW = Date.UTC(2026, 2, 3, 0, 0, 0);
const TOKEN = 'demo-token';

type Data = Record<string, unknown>;
interface Body {
  start: string;
  end: string;
  account: string;
  metrics: string[];
  data: Data[];
  description?: string;
}

async function get(
  sim: Simulator,
  path: string,
  params: [string, string][],
  /** null: no token header. */
  token: string | null = TOKEN,
): Promise<{ status: number; type: string | null; body: Body }> {
  const qs = new URLSearchParams(params).toString();
  const res = await fetch(`${sim.url}/app/metrics/v1${path}?${qs}`, {
    headers: token === null ? {} : { 'CDN-AUTH-TOKEN': token },
  });
  return { status: res.status, type: res.headers.get('content-type'), body: (await res.json()) as Body };
}

function windowParams(start: number, end: number, account = 'demo'): [string, string][] {
  return [
    ['account', account],
    ['start', formatApiTime(start)],
    ['end', formatApiTime(end)],
  ];
}

/** The counts of one data element, in the shape of the simulator's truth. */
function countsOf(d: Data, side: 'edge' | 'origin', seconds: number) {
  const num = (k: string) => d[`${side}_${k}`] as number;
  return {
    codes: Object.fromEntries(CODES.map((c) => [c, num(`status_${c}`)])),
    classes: Object.fromEntries(CLASSES.map((c) => [c, num(`status_${c}`)])),
    requests: num('requests_total'),
    bytes: Math.round((num('bandwidth') * seconds) / 8),
    hitBytes: side === 'edge' ? num('hit_bytes') : 0,
  };
}
type Counts = ReturnType<typeof countsOf>;

function emptyCounts(): Counts {
  return {
    codes: Object.fromEntries(CODES.map((c) => [c, 0])),
    classes: Object.fromEntries(CLASSES.map((c) => [c, 0])),
    requests: 0,
    bytes: 0,
    hitBytes: 0,
  };
}

function addCounts(into: Counts, c: Counts): void {
  for (const k of CODES) into.codes[k]! += c.codes[k]!;
  for (const k of CLASSES) into.classes[k]! += c.classes[k]!;
  into.requests += c.requests;
  into.bytes += c.bytes;
  into.hitBytes += c.hitBytes;
}

function truthCounts(t: SideTotals): Counts {
  return { codes: t.codes, classes: t.classes, requests: t.requests, bytes: t.bytes, hitBytes: t.hitBytes };
}

describe('traffic API: validation', () => {
  let sim: Simulator;
  beforeAll(async () => {
    sim = await startSimulator({ seed: 42, clock: new FakeClock(NOW) });
  });
  afterAll(async () => {
    await sim.close();
  });

  it('refuses seconds other than 00 with the documented description', async () => {
    for (const [start, end] of [
      ['2026-03-02T10:00:30', '2026-03-02T10:05:00'],
      ['2026-03-02T10:00:00', '2026-03-02T10:05:01'],
    ]) {
      const r = await get(sim, '/', [
        ['account', 'demo'],
        ['start', start!],
        ['end', end!],
      ]);
      expect(r.status).toBe(422);
      expect(r.type).toMatch(/^application\/json/);
      expect(r.body).toEqual({ description: 'Invalid time format. Time must be at minute precision' });
    }
  });

  it('accepts 1 and 10 minutes and refuses 0, 11 and a negative period', async () => {
    expect((await get(sim, '/', windowParams(R0, R0 + MINUTE))).status).toBe(200);
    expect((await get(sim, '/resources', windowParams(R0, R0 + 10 * MINUTE))).status).toBe(200);
    for (const [s, e] of [
      [R0, R0],
      [R0, R0 + 11 * MINUTE],
      [R0 + MINUTE, R0],
    ]) {
      const r = await get(sim, '/', windowParams(s!, e!));
      expect(r.status).toBe(422);
      expect(r.body.description).toMatch(/1 to 10 minutes/);
    }
  });

  it('refuses a missing account, start or end with 422 naming the parameter', async () => {
    const all = windowParams(R0, R0 + MINUTE);
    for (const missing of ['account', 'start', 'end']) {
      const r = await get(
        sim,
        '/resources',
        all.filter(([k]) => k !== missing),
      );
      expect(r.status).toBe(422);
      expect(r.body.description).toContain(missing);
    }
  });

  it('refuses malformed times, unknown metrics and unknown resources with 422', async () => {
    const bad = await get(sim, '/', [
      ['account', 'demo'],
      ['start', '2026-03-02 10:00'],
      ['end', '2026-03-02T10:05:00'],
    ]);
    expect(bad.status).toBe(422);
    expect(bad.body.description).toContain('start');
    const metric = await get(sim, '/', [...windowParams(R0, R0 + MINUTE), ['metric', 'edge_status_999']]);
    expect(metric.status).toBe(422);
    expect(metric.body.description).toContain('edge_status_999');
    const resource = await get(sim, '/resources', [...windowParams(R0, R0 + MINUTE), ['resource', 'nope']]);
    expect(resource.status).toBe(422);
    expect(resource.body.description).toContain('nope');
  });

  it('answers 403 JSON for a missing or bad token, another account and an unknown account', async () => {
    const cases: [string | null, string][] = [
      [null, 'demo'],
      ['wrong-token', 'demo'],
      ['acme-token', 'demo'],
      [TOKEN, 'no-such-account'],
    ];
    for (const [token, account] of cases) {
      const r = await get(sim, '/', windowParams(R0, R0 + MINUTE, account), token);
      expect(r.status).toBe(403);
      expect(r.type).toMatch(/^application\/json/);
      expect(typeof r.body.description).toBe('string');
      expect(r.body).not.toHaveProperty('data');
    }
    const ok = await get(sim, '/', windowParams(R0, R0 + MINUTE, 'acme'), 'acme-token');
    expect(ok.status).toBe(200);
  });
});

describe('traffic API: ground truth', () => {
  let sim: Simulator;
  beforeAll(async () => {
    sim = await startSimulator({ seed: 42, clock: new FakeClock(NOW) });
  });
  afterAll(async () => {
    await sim.close();
  });

  it('answers with the documented envelope and every documented metric by default', async () => {
    const r = await get(sim, '/resources', windowParams(R0, R0 + 5 * MINUTE));
    expect(r.status).toBe(200);
    expect(r.body.start).toBe('2026-03-02T10:00:00');
    expect(r.body.end).toBe('2026-03-02T10:05:00');
    expect(r.body.account).toBe('demo');
    expect(r.body.metrics).toEqual(METRIC_NAMES);
    const ids = sim.accounts.find((a) => a.name === 'demo')!.resources.map((res) => res.id);
    expect(r.body.data.map((d) => d.resource)).toEqual(ids);
    for (const d of r.body.data) {
      expect(typeof d.cname).toBe('string');
      expect(typeof d.resource_name).toBe('string');
      for (const name of METRIC_NAMES) expect(d).toHaveProperty(name);
    }
    // A resource with no traffic is listed all the same.
    const staging = r.body.data.find((d) => d.resource_name === 'staging')!;
    expect(staging.edge_requests_total).toBe(0);
  });

  it('sums consecutive windows of every length 1..10 exactly to the truth of the range, per resource', async () => {
    const end = R0 + HOUR;
    const account = sim.accounts.find((a) => a.name === 'demo')!;
    const truth = new Map(account.resources.map((r) => [r.id, sim.truth('demo', r.id, R0, end)]));
    // The range is not trivial: there is traffic, and some of it is 5xx.
    const all = sim.truth('demo', undefined, R0, end);
    expect(all.edge.requests).toBeGreaterThan(1000);
    expect(all.edge.classes['5xx'] + all.origin.classes['5xx']).toBeGreaterThan(0);

    for (let len = 1; len <= 10; len++) {
      const sums = new Map(
        account.resources.map((r) => [r.id, { edge: emptyCounts(), origin: emptyCounts() }]),
      );
      for (let s = R0; s < end; s += len * MINUTE) {
        const e = Math.min(end, s + len * MINUTE);
        const r = await get(sim, '/resources', windowParams(s, e));
        expect(r.status).toBe(200);
        for (const d of r.body.data) {
          const acc = sums.get(d.resource as string)!;
          addCounts(acc.edge, countsOf(d, 'edge', (e - s) / 1000));
          addCounts(acc.origin, countsOf(d, 'origin', (e - s) / 1000));
        }
      }
      for (const [id, sum] of sums) {
        const t = truth.get(id)!;
        expect(sum.edge, `edge of ${id}, windows of ${len} min`).toEqual(truthCounts(t.edge));
        expect(sum.origin, `origin of ${id}, windows of ${len} min`).toEqual({
          ...truthCounts(t.origin),
          hitBytes: 0,
        });
      }
    }
  });

  it('keeps the identities of one window: requests = sum of classes, class >= its listed codes, hits <= bytes', async () => {
    const r = await get(sim, '/resources', windowParams(R0 + 20 * MINUTE, R0 + 30 * MINUTE));
    for (const d of r.body.data) {
      for (const side of ['edge', 'origin'] as const) {
        const c = countsOf(d, side, 600);
        expect(c.requests).toBe(CLASSES.reduce((n, k) => n + c.classes[k]!, 0));
        for (const cls of CLASSES) {
          const listed = CODES_BY_CLASS[cls].reduce((n, code) => n + c.codes[code]!, 0);
          expect(c.classes[cls]).toBeGreaterThanOrEqual(listed);
        }
      }
      expect(d.edge_hit_bytes as number).toBeLessThanOrEqual(((d.edge_bandwidth as number) * 600) / 8 + 1e-6);
      const bytes = ((d.edge_bandwidth as number) * 600) / 8;
      if (bytes > 0) expect(d.edge_hit_ratio as number).toBeCloseTo((d.edge_hit_bytes as number) / bytes, 9);
    }
  });

  it('answers the aggregated endpoint with the sum of the resources', async () => {
    for (const [s, e] of [
      [R0, R0 + 7 * MINUTE],
      [R0 + 3 * HOUR, R0 + 3 * HOUR + 10 * MINUTE],
    ]) {
      const agg = await get(sim, '/', windowParams(s!, e!));
      const per = await get(sim, '/resources', windowParams(s!, e!));
      expect(agg.body.data).toHaveLength(1);
      const a = agg.body.data[0]!;
      expect(a).not.toHaveProperty('resource');
      for (const name of METRIC_NAMES) {
        if (name.endsWith('request_time') || name === 'edge_hit_ratio') continue;
        const sum = per.body.data.reduce((n, d) => n + (d[name] as number), 0);
        if (name.endsWith('bandwidth')) expect(a[name] as number).toBeCloseTo(sum, 6);
        else expect(a[name], name).toBe(sum);
      }
    }
  });

  it('returns only the metrics asked for with repeated metric= parameters', async () => {
    const asked = ['edge_status_200', 'origin_requests_total', 'edge_hit_ratio'];
    const r = await get(sim, '/resources', [
      ...windowParams(R0, R0 + 2 * MINUTE),
      ...asked.map((m): [string, string] => ['metric', m]),
    ]);
    expect(r.status).toBe(200);
    expect([...r.body.metrics].sort()).toEqual([...asked].sort());
    for (const d of r.body.data) {
      expect(Object.keys(d).sort()).toEqual([...asked, 'cname', 'resource', 'resource_name'].sort());
    }
    const agg = await get(sim, '/', [
      ...windowParams(R0, R0 + 2 * MINUTE),
      ['metric', 'edge_requests_total'],
    ]);
    expect(Object.keys(agg.body.data[0]!)).toEqual(['edge_requests_total']);
  });

  it('filters by resource= on both endpoints', async () => {
    const params = [...windowParams(R0, R0 + 4 * MINUTE), ['resource', '1002'] as [string, string]];
    const per = await get(sim, '/resources', params);
    expect(per.body.data.map((d) => d.resource)).toEqual(['1002']);
    const agg = await get(sim, '/', params);
    const { cname: _c, resource: _r, resource_name: _n, ...metrics } = per.body.data[0]!;
    expect(agg.body.data[0]).toEqual(metrics);
    const t = sim.truth('demo', '1002', R0, R0 + 4 * MINUTE);
    expect(metrics.edge_requests_total).toBe(t.edge.requests);
  });

  it('varies traffic by resource and with the time of day', async () => {
    const evening = Date.UTC(2026, 2, 2, 20, 0, 0);
    const morning = Date.UTC(2026, 2, 2, 7, 0, 0);
    const requests = (id: string, at: number) => sim.truth('demo', id, at, at + HOUR).edge.requests;
    for (const id of ['1001', '1002', '1003', '1004']) {
      expect(requests(id, evening)).toBeGreaterThan(2 * requests(id, morning));
    }
    const distinct = new Set(['1001', '1002', '1003', '1004'].map((id) => requests(id, evening)));
    expect(distinct.size).toBe(4);
  });

  it('reports request_time as the truth has it', async () => {
    const r = await get(sim, '/resources', [
      ...windowParams(R0, R0 + 10 * MINUTE),
      ['metric', 'edge_request_time'],
      ['metric', 'origin_request_time'],
    ]);
    for (const d of r.body.data) {
      const t = sim.truth('demo', d.resource as string, R0, R0 + 10 * MINUTE);
      expect(d.edge_request_time).toEqual(t.edge.requestTime);
      expect(d.origin_request_time).toEqual(t.origin.requestTime);
    }
    const www = r.body.data.find((d) => d.resource === '1001')!;
    const times = www.edge_request_time as Record<string, number>;
    expect(Object.keys(times)).toEqual([...RANGES]);
    // Larger responses take longer; origin is slower than edge.
    expect(times['4M+']!).toBeGreaterThan(times['0_250k']!);
    expect((www.origin_request_time as Record<string, number>)['0_250k']!).toBeGreaterThan(times['0_250k']!);
  });
});

describe('traffic API: request_time shapes', () => {
  it('answers an object, flattened keys or one number, with the same values', async () => {
    const make = async (shape: 'object' | 'flat' | 'number') => {
      const sim = await startTestSimulator({ seed: 9, clock: new FakeClock(NOW), requestTimeShape: shape });
      const r = await get(sim, '/', [...windowParams(R0, R0 + 3 * MINUTE), ['metric', 'edge_request_time']]);
      expect(r.status).toBe(200);
      expect(r.body.metrics).toEqual(['edge_request_time']);
      return { sim, data: r.body.data[0]! };
    };
    const object = await make('object');
    const flat = await make('flat');
    const number = await make('number');
    const truth: TrafficTotals = object.sim.truth('demo', undefined, R0, R0 + 3 * MINUTE);

    expect(object.data.edge_request_time).toEqual(truth.edge.requestTime);
    expect(flat.data).not.toHaveProperty('edge_request_time');
    expect(Object.keys(flat.data).sort()).toEqual(RANGES.map((r) => `edge_request_time_${r}`).sort());
    for (const r of RANGES) expect(flat.data[`edge_request_time_${r}`]).toBe(truth.edge.requestTime[r]);
    expect(typeof number.data.edge_request_time).toBe('number');
    expect(number.data.edge_request_time).toBe(truth.edge.requestTimeAll);
    expect(truth.edge.requestTimeAll).toBeGreaterThan(0);
  });
});

describe('traffic API: late data', () => {
  it('reports part of a minute until lag seconds after it ended, then all of it; the future reports 0', async () => {
    const M = Date.UTC(2026, 2, 2, 20, 15, 0);
    const clock = new FakeClock(M + MINUTE + 30_000);
    const sim = await startTestSimulator({ seed: 5, clock, lagSeconds: 120 });
    const full = sim.truth('demo', '1003', M, M + MINUTE);
    expect(full.edge.requests).toBeGreaterThan(100);
    const ask = async () => {
      const r = await get(sim, '/resources', [...windowParams(M, M + MINUTE), ['resource', '1003']]);
      return r.body.data[0]!;
    };

    const early = await ask();
    expect(early.edge_requests_total as number).toBeLessThan(full.edge.requests);
    expect(early.edge_requests_total as number).toBeGreaterThan(0);
    const asOf = sim.truth('demo', '1003', M, M + MINUTE, { asOf: clock.now() });
    expect(early.edge_requests_total).toBe(asOf.edge.requests);
    expect(early.edge_status_200).toBe(asOf.edge.codes['200']);
    // 90 s into the 180 s it takes to complete: half of each count, rounded down.
    expect(early.edge_status_200).toBe(Math.floor(full.edge.codes['200']! / 2));
    expect(early.origin_status_304).toBe(Math.floor(full.origin.codes['304']! / 2));

    await clock.advance(60_000);
    const later = await ask();
    expect(later.edge_requests_total as number).toBeGreaterThanOrEqual(early.edge_requests_total as number);
    expect(later.edge_requests_total as number).toBeLessThan(full.edge.requests);

    await clock.advance(30_000); // now = end of minute + 120 s
    const done = await ask();
    expect(done.edge_requests_total).toBe(full.edge.requests);
    expect(done.edge_hit_bytes).toBe(full.edge.hitBytes);

    const future = await get(sim, '/', windowParams(clock.now() + 5 * MINUTE, clock.now() + 10 * MINUTE));
    expect(future.status).toBe(200);
    expect(future.body.data[0]!.edge_requests_total).toBe(0);
  });

  it('changes its lag and corrects minutes downward on demand, in its answers and its truth alike', async () => {
    const M = Date.UTC(2026, 2, 2, 20, 15, 0);
    const clock = new FakeClock(M + MINUTE + 30_000);
    const sim = await startTestSimulator({ seed: 5, clock, lagSeconds: 120 });
    const full = sim.truth('demo', '1003', M, M + MINUTE);
    const ask = async () => {
      const r = await get(sim, '/resources', [...windowParams(M, M + MINUTE), ['resource', '1003']]);
      return r.body.data[0]!;
    };
    expect((await ask()).edge_requests_total as number).toBeLessThan(full.edge.requests);
    sim.setLag(0);
    expect((await ask()).edge_requests_total).toBe(full.edge.requests);

    sim.correctDown('demo', M, M + MINUTE, 0.5);
    const corrected = await ask();
    expect(corrected.edge_status_200).toBe(Math.floor(full.edge.codes['200']! / 2));
    expect(sim.truth('demo', '1003', M, M + MINUTE).edge.codes['200']).toBe(corrected.edge_status_200);
    // Other accounts and minutes are left as they were.
    expect(sim.truth('demo', '1003', M + MINUTE, M + 2 * MINUTE).edge.requests).toBeGreaterThan(0);
    expect(() => sim.correctDown('demo', M, M + MINUTE, 1.5)).toThrow('0..1');
    expect(() => sim.setLag(-1)).toThrow('seconds >= 0');
  });

  it('is deterministic for a seed and differs between seeds', async () => {
    const clock = new FakeClock(NOW);
    const sim = await startTestSimulator({ seed: 1, clock });
    const a = await get(sim, '/', windowParams(R0, R0 + 10 * MINUTE));
    const b = await get(sim, '/', windowParams(R0, R0 + 10 * MINUTE));
    expect(a.body).toEqual(b.body);
    const other = await startTestSimulator({ seed: 2, clock });
    const c = await get(other, '/', windowParams(R0, R0 + 10 * MINUTE));
    expect(c.body.data[0]!.edge_requests_total).not.toBe(a.body.data[0]!.edge_requests_total);
  });
});
