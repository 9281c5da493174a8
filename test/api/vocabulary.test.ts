/**
 * The API's own names (src/api/vocabulary.ts) against the documents that carry them in this repository:
 * docs/upstream-api.md (status codes, classes, metric names, sides) and docs/metrics.md (size ranges), and
 * docs/configuration.md for the breakdowns. Values are checked as the documents spell them, in their order.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  BREAKDOWNS,
  CODES_BY_CLASS,
  METRIC_NAMES,
  SIDES,
  SIZE_RANGES,
  STATUS_CLASSES,
  STATUS_CODES,
  STATUS_SUFFIXES,
} from '../../src/api/vocabulary.js';
import { ROOT, readDoc, tableRow } from '../helpers/markdown.js';

/** The list of documented codes in docs/upstream-api.md ("for the documented codes 200, ..., 500..505"), expanded. */
function documentedCodes(): string[] {
  const text = readDoc('docs/upstream-api.md').replace(/\s+/g, ' ');
  const m = /for the documented codes ([\d., ]+) and the classes (\dxx)\.\.(\dxx)/.exec(text);
  expect(m, 'docs/upstream-api.md lists the documented codes').not.toBeNull();
  return m![1]!
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '')
    .flatMap((item) => {
      const range = /^(\d+)\.\.(\d+)$/.exec(item);
      if (!range) return [item];
      const out: string[] = [];
      for (let c = Number(range[1]); c <= Number(range[2]); c++) out.push(String(c));
      return out;
    });
}

describe('status codes and classes', () => {
  it('are the codes docs/upstream-api.md documents, in its order, each in the class of its first digit', () => {
    expect([...STATUS_CODES]).toEqual(documentedCodes());
    expect(STATUS_CLASSES).toEqual(['2xx', '3xx', '4xx', '5xx']);
    for (const cls of STATUS_CLASSES)
      for (const code of CODES_BY_CLASS[cls]) expect(`${code[0]}xx`, code).toBe(cls);
  });

  it('every suffix of *_status_<suffix>: each class after its codes, no suffix twice', () => {
    expect([...STATUS_SUFFIXES]).toEqual([
      ...['200', '204', '206', '2xx'],
      ...['301', '302', '304', '3xx'],
      ...['400', '401', '403', '404', '416', '429', '4xx'],
      ...['500', '501', '502', '503', '504', '505', '5xx'],
    ]);
    expect(new Set(STATUS_SUFFIXES).size).toBe(STATUS_SUFFIXES.length);
  });
});

describe('size ranges', () => {
  it("are the eight ranges docs/metrics.md names, spelled as the API spells them (the last one '4M+')", () => {
    const text = readDoc('docs/metrics.md').replace(/\s+/g, ' ');
    const m = /`size_range` keeps the API's names: (.*?), or `all`/.exec(text);
    expect(m, 'docs/metrics.md names the size ranges under `size_range`').not.toBeNull();
    const documented = [...m![1]!.matchAll(/`([^`]+)`/g)].map((x) => x[1]);
    expect([...SIZE_RANGES]).toEqual(documented);
    expect(SIZE_RANGES).toHaveLength(8);
  });
});

describe('metric names', () => {
  const edge = METRIC_NAMES.filter((n) => n.startsWith('edge_'));
  const origin = METRIC_NAMES.filter((n) => n.startsWith('origin_'));

  it('are per side: origin first, then edge, as the document lists them; every name is on one of the two sides', () => {
    expect(SIDES).toEqual(['edge', 'origin']);
    expect(edge.length + origin.length).toBe(METRIC_NAMES.length);
    expect(METRIC_NAMES.indexOf('origin_bandwidth')).toBe(0);
    expect(Math.max(...origin.map((n) => METRIC_NAMES.indexOf(n)))).toBeLessThan(
      Math.min(...edge.map((n) => METRIC_NAMES.indexOf(n))),
    );
    expect(new Set(METRIC_NAMES).size).toBe(METRIC_NAMES.length);
  });

  it('both sides have bandwidth, request_time, requests_total and a status for every suffix; hit metrics are edge only', () => {
    for (const side of SIDES) {
      const names = side === 'edge' ? edge : origin;
      for (const stem of ['bandwidth', 'request_time', 'requests_total'])
        expect(names).toContain(`${side}_${stem}`);
      expect(names.filter((n) => n.startsWith(`${side}_status_`))).toEqual(
        STATUS_SUFFIXES.map((s) => `${side}_status_${s}`),
      );
    }
    expect(edge.filter((n) => n.startsWith('edge_hit_'))).toEqual(['edge_hit_ratio', 'edge_hit_bytes']);
    expect(origin.some((n) => n.includes('_hit_'))).toBe(false);
    // 2 sides x (20 suffixes + bandwidth, request_time, requests_total) + 2 hit metrics.
    expect(METRIC_NAMES).toHaveLength(2 * (STATUS_SUFFIXES.length + 3) + 2);
  });
});

describe('breakdowns', () => {
  it("are the values of metrics.breakdown in docs/configuration.md's table", () => {
    const row = tableRow(readDoc('docs/configuration.md'), 'metrics.breakdown');
    expect(row, 'docs/configuration.md has a row for metrics.breakdown').toBeDefined();
    const values = [...row![2]!.matchAll(/`([^`]+)`/g)].map((m) => m[1]);
    expect(values).toEqual([...BREAKDOWNS]);
  });
});

describe('the module', () => {
  it('imports no other module of the exporter (every layer may import it; src/api/README.md)', () => {
    const text = readFileSync(join(ROOT, 'src', 'api', 'vocabulary.ts'), 'utf8');
    expect(text).not.toMatch(/from\s+['"]\./);
    expect(text).not.toMatch(/import\(\s*['"]\./);
  });
});
