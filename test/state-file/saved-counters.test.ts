/**
 * The state file's counter part (src/state-file/saved-counters.ts): the traffic counters' values and starts saved,
 * and continued by a restart (docs/configuration.md, `state_file`); what is kept for accounts not polled here. A
 * row this version cannot place (a family it does not have, other labels) starts at 0 with a warning, never lands
 * on another series; one no longer configured is left out with a word.
 */
import { describe, expect, it } from 'vitest';
import { CounterKeep, type RestoreCounter, type SavedCounters } from '../../src/state-file/saved-counters.js';
import { SeriesStore } from '../../src/store/series-store.js';
import type { Family, FamilySpec } from '../../src/store/types.js';
import { captureLog } from '../helpers/log-capture.js';

const T = Date.UTC(2026, 5, 1, 12, 0);
const REQUESTS: FamilySpec = {
  name: 'cdn_edge_requests_total',
  help: 'Requests.',
  type: 'counter',
  labelNames: ['account', 'resource'],
};
const RESPONSES: FamilySpec = {
  name: 'cdn_edge_responses_total',
  help: 'Responses.',
  type: 'counter',
  labelNames: ['account', 'resource', 'code'],
};

function families(...specs: FamilySpec[]): Family[] {
  const store = new SeriesStore({ clock: { now: () => T } });
  return specs.map((s) => store.family(s));
}

/** What the pipeline does with a restored row (TrafficMapping.restoreCounter): the series at its value and start. */
const restoreInto: RestoreCounter = (family, labels, value, startMs) => {
  family.set(family.slot(labels, startMs), value);
  return true;
};

/** Every series of the families: name{labels} -> [value, start ms]. */
function contents(fs: readonly Family[]): Record<string, [number, number]> {
  const out: Record<string, [number, number]> = {};
  for (const f of fs)
    f.forEach((labels, value, slot) => {
      out[`${f.spec.name}{${labels.join(',')}}`] = [value, f.startOf!(slot)];
    });
  return out;
}

/** The file's text and back, as a restart reads it. */
const throughFile = (s: SavedCounters): SavedCounters => JSON.parse(JSON.stringify(s));

describe('counter part: saved, then continued by a restart', () => {
  it('gives each account its series back at their values and starts (whole seconds)', () => {
    const before = families(REQUESTS, RESPONSES);
    const [req, resp] = before as [Family, Family];
    req.set(req.slot(['acme', 'r1'], T - 3 * 3600_000 + 500), 1200);
    req.set(req.slot(['acme', 'r2'], T - 60_000), 7);
    resp.set(resp.slot(['acme', 'r1', '200'], T - 3 * 3600_000), 1150);
    req.set(req.slot(['globex', 'x'], T - 120_000), 3);
    const saved = throughFile(new CounterKeep(() => before).save(new Set(['acme', 'globex'])));
    expect(saved.version).toBe(1);
    expect(saved.families).toEqual([REQUESTS.name, RESPONSES.name]);

    const after = families(REQUESTS, RESPONSES);
    const keep = new CounterKeep(() => after);
    keep.restore(saved);
    const { log, lines } = captureLog();
    keep.continueAccount('acme', restoreInto, log);
    keep.continueAccount('globex', restoreInto, log);
    expect(lines).toEqual([]);
    expect(contents(after)).toEqual({
      'cdn_edge_requests_total{acme,r1}': [1200, T - 3 * 3600_000],
      'cdn_edge_requests_total{acme,r2}': [7, T - 60_000],
      'cdn_edge_requests_total{globex,x}': [3, T - 120_000],
      'cdn_edge_responses_total{acme,r1,200}': [1150, T - 3 * 3600_000],
    });
  });

  it('hands an account its rows once: a second start of its poller finds nothing to restore', () => {
    const fs = families(REQUESTS);
    const keep = new CounterKeep(() => fs);
    keep.restore({ version: 1, families: [REQUESTS.name], accounts: { acme: [[0, 5, 0, 'r1']] } });
    const calls: string[][] = [];
    const restore: RestoreCounter = (_f, labels) => {
      calls.push([...labels]);
      return true;
    };
    keep.continueAccount('acme', restore, captureLog().log);
    keep.continueAccount('acme', restore, captureLog().log);
    keep.continueAccount('unknown', restore, captureLog().log);
    expect(calls).toEqual([['acme', 'r1']]);
  });

  it('leaves out rows of a family this version does not have, or with other labels, and warns once with their count', () => {
    const fs = families(REQUESTS, RESPONSES);
    const keep = new CounterKeep(() => fs);
    keep.restore({
      version: 1,
      families: [REQUESTS.name, 'cdn_edge_gone_total', RESPONSES.name],
      accounts: {
        acme: [
          [0, 5, 0, 'r1'],
          [1, 9, 0, 'r1'],
          // One label short of the responses family, and one too many for requests.
          [2, 4, 0, 'r1'],
          [0, 8, 0, 'r1', '200'],
          // An index past the family list.
          [7, 1, 0, 'r1'],
        ],
      },
    });
    const { log, lines } = captureLog();
    keep.continueAccount('acme', restoreInto, log);
    expect(contents(fs)).toEqual({ 'cdn_edge_requests_total{acme,r1}': [5, 0] });
    const warned = lines.map((l) => JSON.parse(l));
    expect(warned).toHaveLength(1);
    expect(warned[0]).toMatchObject({ series: 4 });
    expect(warned[0].msg).toContain('families or labels this version does not have; they start at 0');
  });

  it('says how many rows are no longer configured (restore refused them), without a warning', () => {
    const fs = families(REQUESTS);
    const keep = new CounterKeep(() => fs);
    keep.restore({
      version: 1,
      families: [REQUESTS.name],
      accounts: {
        acme: [
          [0, 5, 0, 'kept'],
          [0, 6, 0, 'dropped'],
          [0, 7, 0, 'dropped too'],
        ],
      },
    });
    const { log, lines } = captureLog();
    keep.continueAccount(
      'acme',
      (f, labels, v, s) => labels[1] === 'kept' && restoreInto(f, labels, v, s),
      log,
    );
    const said = lines.map((l) => JSON.parse(l));
    expect(said).toHaveLength(1);
    expect(said[0]).toMatchObject({ series: 2, level: 30 });
    expect(said[0].msg).toContain('no longer configured are left out');
  });
});

describe('counter part: what is kept of accounts not polled here', () => {
  it('carries a loaded account nobody polls into every save, its families renumbered to this version', () => {
    const fs = families(REQUESTS, RESPONSES);
    const keep = new CounterKeep(() => fs);
    // Another version's file: its families in another order, and one this version does not have.
    keep.restore({
      version: 1,
      families: [RESPONSES.name, 'cdn_edge_gone_total', REQUESTS.name],
      accounts: {
        shard2: [
          [0, 40, T / 1000, 'r', '200'],
          [1, 1, 0, 'r'],
          [2, 41, T / 1000, 'r'],
        ],
        acme: [[2, 5, 0, 'r1']],
      },
    });
    const [req] = fs as [Family];
    req.set(req.slot(['acme', 'r1'], T), 6);
    const saved = keep.save(new Set(['acme']));
    expect(saved.families).toEqual([REQUESTS.name, RESPONSES.name]);
    // The polled account's rows come from its series now, not from the file.
    expect(saved.accounts).toEqual({
      shard2: [
        [1, 40, T / 1000, 'r', '200'],
        [0, 41, T / 1000, 'r'],
      ],
      acme: [[0, 6, T / 1000, 'r1']],
    });
  });

  it('keeps an account stopped at run time where save() and its return find it, until forgotten', () => {
    const fs = families(REQUESTS);
    const [req] = fs as [Family];
    req.set(req.slot(['acme', 'r1'], T - 60_000), 11);
    req.set(req.slot(['acme', 'r2'], T), 12);
    const keep = new CounterKeep(() => fs);
    // The account stops: its series are kept (r3 was never made and is passed over), then deleted.
    keep.keep('acme', (fn) => {
      for (const r of ['r1', 'r2', 'r3']) fn(req, ['acme', r]);
    });
    req.deleteWhere((labels) => labels[0] === 'acme');
    expect(keep.save(new Set()).accounts).toEqual({
      acme: [
        [0, 11, (T - 60_000) / 1000, 'r1'],
        [0, 12, T / 1000, 'r2'],
      ],
    });

    // It comes back: its counters continue where they were.
    keep.continueAccount('acme', restoreInto, captureLog().log);
    expect(contents(fs)).toEqual({
      'cdn_edge_requests_total{acme,r1}': [11, T - 60_000],
      'cdn_edge_requests_total{acme,r2}': [12, T],
    });

    // It stops again with nothing counted, then is away past the retention: nothing of it stays.
    keep.keep('acme', (fn) => fn(req, ['acme', 'r1']));
    req.deleteWhere(() => true);
    keep.forget('acme');
    expect(keep.save(new Set()).accounts).toEqual({});
  });

  it('keeps no empty entry for an account stopped without series', () => {
    const fs = families(REQUESTS);
    const keep = new CounterKeep(() => fs);
    keep.restore({ version: 1, families: [REQUESTS.name], accounts: { acme: [[0, 5, 0, 'r1']] } });
    keep.keep('acme', () => {});
    expect(keep.save(new Set()).accounts).toEqual({});
  });
});
