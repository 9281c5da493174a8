/**
 * Counter starts in the state file (issue 33, row 4): a start that cannot be true (in the future, milliseconds
 * for seconds, past what the store keeps, negative, not a number) was served as it was or wrapped (2^32 + 1000 s
 * became 1970-01-01T00:16:40Z), written back without a word, and OpenMetrics said `_created 0` where protobuf left
 * the start out; a negative or text start cost the whole account its counters (a reset). Now each bad start is
 * dropped for its series alone (the value continues, without a start), one warning counts them, and both formats
 * leave the start out alike (docs/metrics.md, "Start timestamps").
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MINUTE } from '../../src/clock.js';
import type { SimAccount } from '../../src/simulator/types.js';
import type { SavedCounters } from '../../src/state-file/saved-counters.js';
import { StateFile } from '../../src/state-file/state-file.js';
import { Scrape } from '../helpers/exposition.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { captureLog } from '../helpers/log-capture.js';
import { perTest } from '../helpers/per-test.js';
import { decodeProtobuf } from '../helpers/protobuf.js';
import { runClock, type Stack } from '../helpers/stack.js';

const started = perTest();

const T0 = Date.UTC(2026, 6, 1, 0, 0, 0);
const YEAR_S = 365 * 24 * 3600;

/** The row's values, as found in a file loaded at `nowMs`; `none`: the start the series continues with is none. */
function rowValues(nowMs: number): Array<{ what: string; start: unknown; dropped: boolean }> {
  const now = Math.floor(nowMs / 1000);
  return [
    { what: 'now + 10 years', start: now + 10 * YEAR_S, dropped: true },
    { what: '2^32 + 1000', start: 2 ** 32 + 1000, dropped: true },
    { what: 'milliseconds instead of seconds', start: nowMs - 3_600_000, dropped: true },
    { what: '1e15', start: 1e15, dropped: true },
    { what: '1e308', start: 1e308, dropped: true },
    { what: 'negative', start: -60, dropped: true },
    { what: 'text', start: '1782864000', dropped: true },
    { what: 'a fraction', start: now - 60.5, dropped: true },
    // 0 is the file's "none": kept as none, not a problem.
    { what: '0', start: 0, dropped: false },
  ];
}

const OPENMETRICS = 'application/openmetrics-text; version=1.0.0';
const PROTOBUF =
  'application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited';

async function get(stack: Stack, accept: string): Promise<Buffer> {
  const res = await fetch(`${stack.url}/metrics`, { headers: { accept } });
  expect(res.status).toBe(200);
  return Buffer.from(await res.arrayBuffer());
}

/** A series as the state file names it: its family and its label values after the account. */
const keyOf = (family: string, after: readonly unknown[]) => `${family}${JSON.stringify(after)}`;

/**
 * Every counter series of the exporter's families (cdn_*), by keyOf (labels in their order, the account first):
 * its start in each format.
 */
async function starts(
  stack: Stack,
): Promise<Map<string, { openMetrics: number | undefined; protobuf: number | undefined }>> {
  await stack.exporter.store.refresh();
  const out = new Map<string, { openMetrics: number | undefined; protobuf: number | undefined }>();
  const key = (name: string, labels: Record<string, string>) => keyOf(name, Object.values(labels).slice(1));
  for (const f of decodeProtobuf(await get(stack, PROTOBUF))) {
    if (f.type !== 'counter' || !f.name.startsWith('cdn_')) continue;
    for (const m of f.metrics)
      out.set(key(f.name, m.labels), { openMetrics: undefined, protobuf: m.created });
  }
  const om = Scrape.of((await get(stack, OPENMETRICS)).toString());
  for (const s of om.samples) {
    if (!s.name.endsWith('_created')) continue;
    const name = `${s.name.slice(0, -'_created'.length)}_total`;
    const row = out.get(key(name, s.labels));
    if (row) row.openMetrics = s.value;
  }
  return out;
}

describe('counter starts in the state file, on load', () => {
  it('drops each bad start for its series alone, keeps every value, warns once with the count, keeps the file aside', async () => {
    const dir = started.folder('cdn-starts-');
    const path = join(dir, 'state.json');
    const now = T0 + 90 * MINUTE;
    const values = rowValues(now);
    const good = Math.floor(T0 / 1000);
    const counters = {
      version: 1,
      families: ['cdn_edge_requests_total'],
      accounts: {
        acme: [[0, 7, good, 'good'], ...values.map((v, i) => [0, 100 + i, v.start, `r${i}`])],
        beta: [[0, 5, good + 60, 'b']],
      },
    };
    writeFileSync(
      path,
      JSON.stringify({
        version: 1,
        cursors: { acme: new Date(T0 + 60 * MINUTE).toISOString(), beta: new Date(T0).toISOString() },
        counters,
      }),
    );
    const { log, lines } = captureLog();
    const loaded = await new StateFile(path).load({ now, maxCatchUpMs: 7 * 24 * 60 * MINUTE }, log);
    const acme = loaded.counters!.accounts.acme!;
    // Every series is kept, at its value: a bad start is no longer a counter reset of the account.
    expect(acme.map((s) => [s[1], s[3]])).toEqual([[7, 'good'], ...values.map((_, i) => [100 + i, `r${i}`])]);
    expect(acme[0]![2]).toBe(good);
    for (const [i, v] of values.entries()) expect(acme[i + 1]![2], v.what).toBe(v.dropped ? 0 : v.start);
    expect(loaded.counters!.accounts.beta).toEqual([[0, 5, good + 60, 'b']]);
    const bad = values.filter((v) => v.dropped).length;
    const warnings = lines.filter((l) => l.includes('counter start'));
    expect(warnings).toHaveLength(1);
    expect(JSON.parse(warnings[0]!)).toMatchObject({ level: 40, starts: bad, account: 'acme' });
    expect(warnings[0]).toContain(`${bad} counter start(s) are not Unix seconds from 1970 up to now`);
    expect(loaded.problems).toHaveLength(1);
    expect(loaded.keptAs && existsSync(loaded.keptAs)).toBe(true);
  });

  it('takes good starts, and 0 (none), without a word', async () => {
    const dir = started.folder('cdn-starts-');
    const path = join(dir, 'state.json');
    const now = T0 + 90 * MINUTE;
    const series: SavedCounters['accounts'][string] = [
      [0, 1, 1, 'epoch + 1 s'],
      [0, 2, 0, 'none'],
      [0, 3, Math.floor(now / 1000), 'now'],
    ];
    writeFileSync(
      path,
      JSON.stringify({
        version: 1,
        cursors: { acme: new Date(T0).toISOString() },
        counters: { version: 1, families: ['cdn_edge_requests_total'], accounts: { acme: series } },
      }),
    );
    const { log, lines } = captureLog();
    const loaded = await new StateFile(path).load({ now, maxCatchUpMs: 7 * 24 * 60 * MINUTE }, log);
    expect(loaded.counters!.accounts.acme).toEqual(series);
    expect(loaded.problems).toEqual([]);
    expect(loaded.keptAs).toBeUndefined();
    expect(lines.filter((l) => l.includes('counter start'))).toEqual([]);
  });
});

function account(): SimAccount {
  return {
    name: 'demo',
    token: 'demo-token',
    resources: [{ id: '100', name: 'r100', cname: 'r100.demo.example' }],
    streams: [],
    recordings: [],
  };
}

interface SavedFile {
  cursors: Record<string, string>;
  counters: SavedCounters;
}

describe('counter starts across a restart', () => {
  it('serves each value of the row the same in OpenMetrics and protobuf, and writes a dropped start back as 0', async () => {
    const dir = started.folder('cdn-starts-restart-');
    const clock = new FakeClock(T0);
    const path = join(dir, 'state.json');
    const config = {
      state_file: path,
      metrics: { lookback: '30m', delay: '0m', window: '5m' },
    };
    const sim = await started.simulator({ seed: 5, clock, accounts: [account()] });
    const one = await started.stack({ clock, simulator: sim, config });
    await runClock(clock, 10_000, [one]);
    await one.stop();

    // The saved traffic counters of the resource, one bad value of the row each; the rest stay as saved.
    const file = JSON.parse(readFileSync(path, 'utf8')) as SavedFile;
    const { families } = file.counters;
    const series = file.counters.accounts.demo!;
    const traffic = series.filter((s) => /^cdn_(edge|origin)_/.test(families[s[0]]!));
    const values = rowValues(clock.now());
    expect(traffic.length).toBeGreaterThanOrEqual(values.length + 1);
    const changed = new Map<string, (typeof values)[number]>();
    values.forEach((v, i) => {
      const s = traffic[i]!;
      (s as unknown[])[2] = v.start;
      changed.set(keyOf(families[s[0]]!, s.slice(3)), v);
    });
    const untouched = traffic[values.length]!;
    writeFileSync(path, JSON.stringify(file));

    const { log, lines } = captureLog();
    const two = await started.stack({ clock, simulator: sim, config, exporter: { log } });
    const bad = values.filter((v) => v.dropped).length;
    expect(lines.filter((l) => l.includes(`${bad} counter start(s) are not Unix seconds`))).toHaveLength(1);

    const served = await starts(two);
    // Both formats agree on every counter series: the same start, or none in both.
    for (const [k, s] of served) expect(s.openMetrics, k).toBe(s.protobuf);
    // A dropped start, and 0, are none in both; the series is served all the same.
    for (const [k, v] of changed)
      expect(served.get(k), v.what).toEqual({ openMetrics: undefined, protobuf: undefined });
    const untouchedKey = keyOf(families[untouched[0]]!, untouched.slice(3));
    expect(served.get(untouchedKey)).toEqual({ openMetrics: untouched[2], protobuf: untouched[2] });

    await two.stop();
    const after = JSON.parse(readFileSync(path, 'utf8')) as SavedFile;
    const byKey = new Map(
      after.counters.accounts.demo!.map((s) => [keyOf(after.counters.families[s[0]]!, s.slice(3)), s]),
    );
    for (const [k, v] of changed) expect(byKey.get(k)?.[2], `${v.what} written back`).toBe(0);
    expect(byKey.get(untouchedKey)?.[2]).toBe(untouched[2]);
  }, 120_000);
});
