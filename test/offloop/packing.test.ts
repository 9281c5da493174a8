/**
 * The shared building blocks of every codec (src/offloop/packing.ts): the texts of one answer written into one
 * string and read back in order, `undefined`, `null` and the empty string each kept as itself; a reader that runs
 * past what was written, or finds a non-string where a string was written, throws a RangeError instead of giving a
 * wrong answer; an answer's report (unknown keys, issues) read back as written; the Slicer, which cuts a long
 * loop into slices of `sliceMs` on the clock it is given, looking at the time only every 256 steps of work.
 */
import { describe, expect, it } from 'vitest';
import type { FieldIssue } from '../../src/http/parse.js';
import { readReport, Slicer, TextReader, TextWriter, writeReport } from '../../src/offloop/packing.js';

/** A slicer on a clock that moves only when told, whose yields are counted. */
function slicer(sliceMs: number) {
  const clock = { ms: 0 };
  const s = new Slicer({ sliceMs, now: () => clock.ms, yieldToLoop: async () => {} });
  return { s, clock };
}

describe('TextWriter and TextReader', () => {
  it('read back every value in the order written, undefined, null and empty strings each as itself', () => {
    const values = ['host-1', undefined, '', null, 'caf\u00e9 \ud83d\ude00', '\ud800', 'x'.repeat(1000), ''];
    const w = new TextWriter();
    for (const v of values) w.add(v);
    const packed = w.done();
    // One string for every text, and one end offset per value.
    expect(packed.text).toBe(values.filter((v) => typeof v === 'string').join(''));
    expect(packed.ends).toHaveLength(values.length);
    const r = new TextReader(packed);
    expect(values.map(() => r.next())).toEqual(values);
  });

  it('a reader that runs past the texts written, or expects a string where none was, throws', () => {
    const w = new TextWriter();
    w.add('a');
    w.add(null);
    const r = new TextReader(w.done());
    expect(r.string()).toBe('a');
    expect(() => r.string()).toThrow(new RangeError('packed answer: a string expected'));
    expect(() => r.next()).toThrow(new RangeError('packed answer: fewer texts than read'));
  });
});

describe('writeReport and readReport', () => {
  it("give back an answer's unknown keys and issues as written, after other texts", async () => {
    const report = {
      unknownKeys: ['extra', 'data[].more'],
      issues: Array.from(
        { length: 600 },
        (_, i): FieldIssue => ({ path: `data[${i}].x`, problem: `bad ${i}` }),
      ),
    };
    const w = new TextWriter();
    w.add('live/main');
    const counts = writeReport(w, report);
    w.add('after');
    expect(counts).toEqual({ unknownKeys: 2, issues: 600 });
    const r = new TextReader(w.done());
    expect(r.string()).toBe('live/main');
    const { s } = slicer(8);
    expect(await readReport(r, counts, s)).toEqual(report);
    expect(r.string()).toBe('after');
  });

  it('an empty report is no text at all', async () => {
    const w = new TextWriter();
    expect(writeReport(w, { unknownKeys: [], issues: [] })).toEqual({ unknownKeys: 0, issues: 0 });
    expect(w.done().ends).toHaveLength(0);
  });
});

describe('Slicer', () => {
  it('is due only once a slice of time has passed, looking at the clock every 256 steps', () => {
    const { s, clock } = slicer(8);
    clock.ms = 100;
    // 255 steps: the clock is not read, however late it is.
    for (let i = 0; i < 255; i++) expect(s.due()).toBe(false);
    expect(s.due()).toBe(true);
    // A step's weight counts for as many steps.
    expect(s.due(255)).toBe(false);
    expect(s.due(1)).toBe(true);
  });

  it('after a yield the next slice starts from the time then', async () => {
    const { s, clock } = slicer(8);
    clock.ms = 10;
    await s.yieldNow();
    expect(s.yields).toBe(1);
    clock.ms = 17;
    expect(s.due(256)).toBe(false);
    clock.ms = 18;
    expect(s.due(256)).toBe(true);
  });

  it('yields to the event loop by default: a timer due now runs in between', async () => {
    const s = new Slicer({ sliceMs: 0 });
    let ran = false;
    setImmediate(() => {
      ran = true;
    });
    await s.yieldNow();
    expect(ran).toBe(true);
  });
});
