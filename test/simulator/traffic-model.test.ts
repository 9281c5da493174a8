/**
 * The simulator's traffic model without HTTP (src/simulator/traffic-model.ts), against src/simulator/README.md,
 * "Traffic", and docs/upstream-api.md: per (seed, account, resource, minute) integer counts per documented code
 * plus codes the API does not list, bytes, hit bytes at most the bytes and none on origin, a median per size range;
 * a range's totals are the sums of its minutes (the request time the 2xx-weighted mean of the medians); the daily
 * shape peaks in the evening; late minutes report floor(count * share); downward corrections multiply.
 * (./traffic.test.ts checks the API's answers against this truth over HTTP.)
 */
import { describe, expect, it } from 'vitest';
import { CODES_BY_CLASS, SIZE_RANGES, STATUS_CLASSES, STATUS_CODES } from '../../src/api/vocabulary.js';
import { MINUTE } from '../../src/clock.js';
import { reportedShare, type SideTotals, TrafficModel } from '../../src/simulator/traffic-model.js';

const HOUR = 60 * MINUTE;
/** Midnight UTC; the model's day is UTC. */
const DAY0 = Date.UTC(2026, 2, 2);
const T = DAY0 + 10 * HOUR;

describe('TrafficModel.minute', () => {
  it('is a function of seed, account, resource and minute: the same again, another for another of them', () => {
    const a = new TrafficModel(1);
    const b = new TrafficModel(1);
    expect(b.minute('acme', '1', T)).toEqual(a.minute('acme', '1', T));
    expect(new TrafficModel(2).minute('acme', '1', T)).not.toEqual(a.minute('acme', '1', T));
    expect(a.minute('acme', '2', T)).not.toEqual(a.minute('acme', '1', T));
    expect(a.minute('other', '1', T)).not.toEqual(a.minute('acme', '1', T));
    expect(a.minute('acme', '1', T + MINUTE)).not.toEqual(a.minute('acme', '1', T));
  });

  it('gives non-negative integer counts for every documented code, hit bytes within the bytes on edge and none on origin', () => {
    const model = new TrafficModel(3);
    for (let m = T; m < T + 30 * MINUTE; m += MINUTE) {
      const { edge, origin } = model.minute('acme', '1', m);
      for (const side of [edge, origin]) {
        expect(Object.keys(side.codes).sort()).toEqual([...STATUS_CODES].sort());
        for (const n of [...Object.values(side.codes), ...Object.values(side.unlisted), side.bytes])
          expect(Number.isInteger(n) && n >= 0).toBe(true);
        expect(side.medians).toHaveLength(SIZE_RANGES.length);
        for (const v of side.medians) expect(v).toBeGreaterThan(0);
      }
      expect(edge.hitBytes).toBeLessThanOrEqual(edge.bytes);
      expect(origin.hitBytes).toBe(0);
    }
  });

  it('has no traffic at scale 0, and twice the requests (give or take rounding) at scale 2', () => {
    const quiet = new TrafficModel(5, { 'acme/1': 0 }).minute('acme', '1', T);
    for (const side of [quiet.edge, quiet.origin]) {
      expect(Object.values(side.codes).every((n) => n === 0)).toBe(true);
      expect(Object.values(side.unlisted).every((n) => n === 0)).toBe(true);
      expect(side.bytes).toBe(0);
    }
    const one = new TrafficModel(5).totals('acme', ['1'], T, T + HOUR).edge.requests;
    const two = new TrafficModel(5, { 'acme/1': 2 }).totals('acme', ['1'], T, T + HOUR).edge.requests;
    expect(two / one).toBeGreaterThan(1.9);
    expect(two / one).toBeLessThan(2.1);
  });

  it('peaks in the evening: the peak hour (17-22 UTC) carries more than the hour twelve hours off, for every resource', () => {
    const model = new TrafficModel(11);
    for (const resource of ['1', '2', '3', '4', '5', '6']) {
      const hourly = Array.from(
        { length: 24 },
        (_, h) => model.totals('acme', [resource], DAY0 + h * HOUR, DAY0 + (h + 1) * HOUR).edge.requests,
      );
      const peak = hourly.indexOf(Math.max(...hourly));
      expect(peak, resource).toBeGreaterThanOrEqual(16);
      expect(peak, resource).toBeLessThanOrEqual(23);
      expect(hourly[peak]!, resource).toBeGreaterThan(2 * hourly[(peak + 12) % 24]!);
    }
  });
});

describe('TrafficModel.totals', () => {
  const model = new TrafficModel(7);

  it('sums the minutes: counts per code, classes as listed plus unlisted codes, requests as the four classes, bytes', () => {
    const minutes = [0, 1, 2].map((i) => model.minute('acme', '1', T + i * MINUTE).edge);
    const t = model.totals('acme', ['1'], T, T + 3 * MINUTE).edge;
    for (const code of STATUS_CODES)
      expect(t.codes[code], code).toBe(minutes.reduce((n, m) => n + m.codes[code]!, 0));
    for (const cls of STATUS_CLASSES) {
      const listed = CODES_BY_CLASS[cls].reduce((n, c) => n + t.codes[c]!, 0);
      expect(t.classes[cls], cls).toBe(listed + minutes.reduce((n, m) => n + m.unlisted[cls], 0));
      expect(t.classes[cls]).toBeGreaterThanOrEqual(listed);
    }
    expect(t.requests).toBe(STATUS_CLASSES.reduce((n, c) => n + t.classes[c], 0));
    expect(t.bytes).toBe(minutes.reduce((n, m) => n + m.bytes, 0));
    expect(t.hitBytes).toBe(minutes.reduce((n, m) => n + m.hitBytes, 0));
  });

  it('adds up across consecutive ranges and across resources', () => {
    const whole = model.totals('acme', ['1', '2'], T, T + 20 * MINUTE);
    const parts = [
      model.totals('acme', ['1'], T, T + 7 * MINUTE),
      model.totals('acme', ['1'], T + 7 * MINUTE, T + 20 * MINUTE),
      model.totals('acme', ['2'], T, T + 20 * MINUTE),
    ];
    for (const side of ['edge', 'origin'] as const) {
      const sum = (pick: (s: SideTotals) => number) => parts.reduce((n, p) => n + pick(p[side]), 0);
      expect(whole[side].requests).toBe(sum((s) => s.requests));
      expect(whole[side].bytes).toBe(sum((s) => s.bytes));
      expect(whole[side].hitBytes).toBe(sum((s) => s.hitBytes));
      for (const code of STATUS_CODES) expect(whole[side].codes[code]).toBe(sum((s) => s.codes[code]!));
    }
  });

  it("reports each range's request time as the mean of the minutes' medians weighted by their 2xx counts", () => {
    const minutes = [0, 1, 2, 3].map((i) => model.minute('acme', '1', T + i * MINUTE).origin);
    const ok = minutes.map((m) => CODES_BY_CLASS['2xx'].reduce((n, c) => n + m.codes[c]!, m.unlisted['2xx']));
    const t = model.totals('acme', ['1'], T, T + 4 * MINUTE).origin;
    const weight = ok.reduce((a, b) => a + b, 0);
    expect(weight).toBeGreaterThan(0);
    SIZE_RANGES.forEach((range, i) => {
      const mean = minutes.reduce((n, m, j) => n + ok[j]! * m.medians[i]!, 0) / weight;
      expect(t.requestTime[range], range).toBeCloseTo(mean, 6);
    });
    expect(t.requestTimeAll).toBeCloseTo(
      minutes.reduce((n, m, j) => n + ok[j]! * m.medianAll, 0) / weight,
      6,
    );
  });

  it('is all zero, request time 0, for a range without traffic; refuses ranges that are not whole minutes', () => {
    const none = new TrafficModel(7, { 'acme/9': 0 }).totals('acme', ['9'], T, T + 10 * MINUTE);
    expect(none.edge.requests).toBe(0);
    expect(Object.values(none.edge.requestTime).every((v) => v === 0)).toBe(true);
    expect(none.edge.requestTimeAll).toBe(0);
    expect(model.totals('acme', ['1'], T, T).edge.requests).toBe(0);
    expect(() => model.totals('acme', ['1'], T + 1, T + MINUTE)).toThrow('truth ranges are whole minutes');
    expect(() => model.totals('acme', ['1'], T, T + 90_000)).toThrow('truth ranges are whole minutes');
  });
});

describe('late data', () => {
  it('reportedShare: 0 until the minute begins, then grows linearly to 1 at lag seconds after it ends', () => {
    const lag = 120;
    expect(reportedShare(T, T - 1, lag)).toBe(0);
    expect(reportedShare(T, T, lag)).toBe(0);
    expect(reportedShare(T, T + 90_000, lag)).toBe(0.5);
    expect(reportedShare(T, T + 179_999, lag)).toBeLessThan(1);
    expect(reportedShare(T, T + 180_000, lag)).toBe(1);
    // Without a lag a minute is complete when it ends.
    expect(reportedShare(T, T + 30_000, 0)).toBe(0.5);
    expect(reportedShare(T, T + MINUTE, 0)).toBe(1);
  });

  it('totals as of a time report floor(count * share) of each minute, and the complete minutes whole', () => {
    const model = new TrafficModel(9);
    const lag = 60;
    const asOf = T + 2 * MINUTE + 30_000;
    // Minute T is complete at T+2min; minute T+1min is at 1.5 of its 2 minutes; T+2min at 0.5 of 2; T+3min not begun.
    const t = model.totals('acme', ['1'], T, T + 4 * MINUTE, { asOf, lagSeconds: lag }).edge;
    const m = [0, 1, 2].map((i) => model.minute('acme', '1', T + i * MINUTE).edge);
    const shares = [1, 0.75, 0.25];
    for (const code of STATUS_CODES)
      expect(t.codes[code], code).toBe(m.reduce((n, x, i) => n + Math.floor(x.codes[code]! * shares[i]!), 0));
    expect(t.bytes).toBe(m.reduce((n, x, i) => n + Math.floor(x.bytes * shares[i]!), 0));
    const complete = model.totals('acme', ['1'], T, T + 4 * MINUTE).edge;
    expect(t.requests).toBeLessThan(complete.requests);
  });
});

describe('correctDown', () => {
  it("reports floor(count * factor) for the account's minutes in the range, corrections multiplying, other accounts untouched", () => {
    const model = new TrafficModel(4);
    const before = model.minute('acme', '1', T).edge;
    const other = model.totals('other', ['1'], T, T + MINUTE);
    model.correctDown('acme', T, T + MINUTE, 0.5);
    model.correctDown('acme', T, T + 2 * MINUTE, 0.5);
    const t = model.totals('acme', ['1'], T, T + MINUTE).edge;
    expect(t.codes['200']).toBe(Math.floor(before.codes['200']! * 0.25));
    expect(t.bytes).toBe(Math.floor(before.bytes * 0.25));
    expect(model.totals('other', ['1'], T, T + MINUTE)).toEqual(other);
    // The minute after the first range has the second correction only.
    const next = model.minute('acme', '1', T + MINUTE).edge;
    expect(model.totals('acme', ['1'], T + MINUTE, T + 2 * MINUTE).edge.bytes).toBe(
      Math.floor(next.bytes * 0.5),
    );
  });

  it('refuses a factor outside 0..1', () => {
    const model = new TrafficModel(4);
    for (const f of [-0.1, 1.5, Number.NaN])
      expect(() => model.correctDown('acme', T, T + MINUTE, f)).toThrow(
        /a downward correction's factor is 0\.\.1/,
      );
    expect(() => model.correctDown('acme', T, T + MINUTE, 0)).not.toThrow();
    expect(model.totals('acme', ['1'], T, T + MINUTE).edge.requests).toBe(0);
  });
});
