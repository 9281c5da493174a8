/**
 * The /metrics body (src/server/exposition.ts), through renderMetrics, textToOpenMetrics and the duplicate check:
 * the registry's part then the store's bytes as they are; OpenMetrics with counter families named without `_total`,
 * a `_created` of the process start in whole seconds after each counter sample and histogram `_count`, and one
 * `# EOF` at the very end (a gzip member of its own when gzipped, so the whole body is one valid gzip stream);
 * protobuf as delimited MetricFamily messages with the same created instant; the store's held bodies given back on
 * release; a family name in both sources found with or without `_total`. The negotiation of the format is
 * src/server/negotiate.ts (tested in test/server/units.test.ts).
 */
import { gunzipSync, gzipSync } from 'node:zlib';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import {
  assertDistinctFamilies,
  duplicateFamilies,
  renderMetrics,
  textToOpenMetrics,
} from '../../src/server/exposition.js';
import type { Exposition, ExpositionFormat, HeldChunks } from '../../src/store/types.js';
import { FakeExposition, sampleFamilies } from '../helpers/fake-exposition.js';
import { decodeProtobuf } from '../helpers/protobuf.js';

/** 12:00:00.750 on a day: the created instant shown is the whole second below. */
const STARTED_MS = Date.UTC(2026, 2, 1, 12, 0, 0, 750);
const STARTED_S = Math.floor(STARTED_MS / 1000);

function registry(): Registry {
  const r = new Registry();
  new Counter({
    name: 'cdn_api_requests_total',
    help: 'Requests "sent".',
    labelNames: ['api'],
    registers: [r],
  }).inc({ api: 'metrics' }, 3);
  new Gauge({ name: 'cdn_api_queue_length', help: 'Queue.', registers: [r] }).set(2);
  new Histogram({ name: 'cdn_poll_seconds', help: 'Poll.', buckets: [1], registers: [r] }).observe(0.5);
  return r;
}

const body = (chunks: Buffer[]) => Buffer.concat(chunks);

describe('renderMetrics', () => {
  it('text: the registry part, then the store part byte for byte, no # EOF, length the sum of the chunks', async () => {
    const store = new FakeExposition(sampleFamilies());
    const r = await renderMetrics(registry(), store, 'text', false, STARTED_MS);
    const text = body(r.chunks).toString();
    expect(r.length).toBe(Buffer.byteLength(text));
    const own = await registry().metrics();
    expect(text.startsWith(own)).toBe(true);
    expect(text.slice(own.length)).toBe(store.render('text').toString());
    expect(text).not.toContain('# EOF');
    // The store's buffer itself is written, not a copy.
    expect(r.chunks).toContain(store.render('text'));
  });

  it('OpenMetrics: counters without _total in HELP/TYPE, _created at the start second, one # EOF at the end', async () => {
    const store = new FakeExposition(sampleFamilies());
    const r = await renderMetrics(registry(), store, 'openmetrics', false, STARTED_MS);
    const text = body(r.chunks).toString();
    expect(text.endsWith('# EOF\n')).toBe(true);
    expect(text.split('# EOF')).toHaveLength(2);
    expect(text).not.toMatch(/\n\n/);
    expect(text).toContain('# TYPE cdn_api_requests counter\n');
    expect(text).toContain(
      `cdn_api_requests_total{api="metrics"} 3\ncdn_api_requests_created{api="metrics"} ${STARTED_S}\n`,
    );
    expect(text).toContain(`cdn_poll_seconds_count 1\ncdn_poll_seconds_created ${STARTED_S}\n`);
    // A gauge has no _created.
    expect(text).not.toContain('cdn_api_queue_length_created');
    // The store's part follows as the store rendered it, before the # EOF.
    expect(text).toContain(store.render('openmetrics').toString() + '# EOF\n');
  });

  it('gzip: the same bytes once decompressed, the whole body one gzip stream, # EOF its own member', async () => {
    for (const format of ['text', 'openmetrics'] as const) {
      const plain = body(
        (await renderMetrics(registry(), new FakeExposition(sampleFamilies()), format, false, STARTED_MS))
          .chunks,
      );
      const store = new FakeExposition(sampleFamilies());
      const r = await renderMetrics(registry(), store, format, true, STARTED_MS);
      const gz = body(r.chunks);
      expect(r.length).toBe(gz.length);
      expect(gunzipSync(gz).toString()).toBe(plain.toString());
      if (format === 'openmetrics') expect(r.chunks.at(-1)).toEqual(gzipSync('# EOF\n'));
      // Gzipped, nothing of the store is held.
      expect(store.held).toBe(0);
    }
  });

  it('protobuf: delimited MetricFamily messages, counters and histograms created at the start second', async () => {
    const store: Exposition = {
      render: () => Buffer.alloc(0),
      hold: () => ({ chunks: [], release: () => undefined }),
      renderGzip: () => gzipSync(Buffer.alloc(0)),
      familyNames: () => [],
    };
    const r = await renderMetrics(registry(), store, 'protobuf', false, STARTED_MS);
    const families = decodeProtobuf(body(r.chunks));
    const byName = new Map(families.map((f) => [f.name, f]));
    expect(byName.get('cdn_api_requests_total')?.metrics).toEqual([
      expect.objectContaining({ labels: { api: 'metrics' }, counter: 3, created: STARTED_S }),
    ]);
    expect(byName.get('cdn_poll_seconds')?.metrics[0]?.created).toBe(STARTED_S);
    expect(byName.get('cdn_api_queue_length')?.metrics[0]?.gauge).toBe(2);
    expect(body(r.chunks).includes('# EOF')).toBe(false);
  });

  it('holds the store bodies until release, awaits a prepare first, and passes on the counted cursors', async () => {
    const events: string[] = [];
    const chunk = Buffer.from('store_series 1\n');
    let releasedWith: boolean | undefined;
    const store: Exposition = {
      render: () => chunk,
      hold: (format: ExpositionFormat): HeldChunks => {
        events.push(`hold ${format}`);
        return {
          chunks: [chunk],
          release: (written) => {
            releasedWith = written;
          },
        };
      },
      renderGzip: () => gzipSync(chunk),
      familyNames: () => ['store_series'],
      prepare: (format) => {
        events.push(`prepare ${format}`);
        return Promise.resolve().then(() => void events.push('prepared'));
      },
      countedIn: () => ({ acme: 42 }) as never,
    };
    const r = await renderMetrics(new Registry(), store, 'text', false, STARTED_MS);
    expect(events).toEqual(['prepare text', 'prepared', 'hold text']);
    expect(r.counted).toEqual({ acme: 42 });
    expect(r.chunks.at(-1)).toBe(chunk);
    // Empty parts are left out (text has no # EOF).
    expect(r.chunks.every((c) => c.length > 0)).toBe(true);
    expect(releasedWith).toBeUndefined();
    r.release(false);
    expect(releasedWith).toBe(false);
  });
});

describe('textToOpenMetrics', () => {
  it('adds no _created without a start, turns every counter sample, and drops other comments', () => {
    const text = [
      '# HELP a_total A.',
      '# TYPE a_total counter',
      'a_total{x="1"} 1',
      'a_total{x="2"} 2',
      '',
      '# other',
      '',
    ].join('\n');
    expect(textToOpenMetrics(text)).toBe(
      '# HELP a A.\n# TYPE a counter\na_total{x="1"} 1\na_total{x="2"} 2\n',
    );
    expect(textToOpenMetrics(text, 7)).toBe(
      '# HELP a A.\n# TYPE a counter\na_total{x="1"} 1\na_created{x="1"} 7\na_total{x="2"} 2\na_created{x="2"} 7\n',
    );
    expect(textToOpenMetrics('')).toBe('');
  });
});

describe('families in both sources', () => {
  it('are found with or without _total, and refuse the start with their names', () => {
    const r = new Registry();
    new Counter({ name: 'cdn_edge_requests_total', help: 'h', registers: [r] });
    new Gauge({ name: 'cdn_up', help: 'h', registers: [r] });
    new Gauge({ name: 'cdn_alone', help: 'h', registers: [r] });
    const store = (names: string[]) => ({ familyNames: () => names }) as unknown as Exposition;
    expect(duplicateFamilies(r, store(['cdn_edge_requests_total', 'cdn_other']))).toEqual([
      'cdn_edge_requests_total',
    ]);
    expect(duplicateFamilies(r, store(['cdn_edge_requests', 'cdn_up']))).toEqual([
      'cdn_edge_requests_total / cdn_edge_requests',
      'cdn_up',
    ]);
    expect(() => assertDistinctFamilies(r, store(['cdn_other']))).not.toThrow();
    expect(() => assertDistinctFamilies(r, store(['cdn_up']))).toThrow(/registered twice.*cdn_up/);
  });
});
