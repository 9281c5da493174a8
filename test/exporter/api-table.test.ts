/**
 * The API table (src/exporter/api-table.ts) as the composition and the parse worker rely on it: the APIs with rows
 * and `cdn_up{api}`, each module's codec findable by the worker from its module path alone, the families each
 * module registers, in the table's order and after traffic's, and which accounts each module polls. A fourth API
 * added with a mistake in any of these fails here (docs/architecture.md, "The API table").
 */
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { API_TABLE, APIS, openApis } from '../../src/exporter/api-table.js';
import { StatusBoard } from '../../src/exporter/status-board.js';
import { silentLogger } from '../../src/log.js';
import { createSelfMetrics } from '../../src/server/self-metrics.js';
import { SeriesStore } from '../../src/store/series-store.js';
import { createTrafficFamilies } from '../../src/traffic/metrics.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { configFrom } from '../helpers/stack.js';

const T0 = Date.UTC(2026, 10, 28);

function storeAndLimits() {
  const store = new SeriesStore({ clock: new FakeClock(T0), refreshLog: silentLogger });
  return {
    store,
    limits: { maxSeries: 1_000_000, maxLabelLength: 1024, storeSize: () => store.size },
  };
}

describe('the API table', () => {
  it('lists traffic first, then one API per module, each named once: the values of cdn_up{api}', () => {
    expect(APIS).toEqual(['metrics', 'dvr-net', 'recorder-cloud']);
    expect(API_TABLE.map((m) => m.api)).toEqual(APIS.slice(1));
    expect(new Set(APIS).size).toBe(APIS.length);
  });

  it('gives each module a codec that the parse worker finds from its module path alone', async () => {
    for (const m of API_TABLE) {
      expect(m.codec.api).toBe(m.api);
      // The worker (src/offloop/worker.ts) imports `../${module}` beside it and takes the export whose api and
      // module match: the same lookup on the source tree.
      expect(m.codec.module).toMatch(/^[a-z][a-z0-9-]*\/[a-z][a-z0-9-]*\.js$/);
      const exported = Object.values(
        (await import(`../../src/${m.codec.module.replace(/\.js$/, '.ts')}`)) as Record<string, unknown>,
      );
      expect(exported, `${m.api}: ${m.codec.module} exports its codec`).toContain(m.codec);
    }
  });

  it("opens each module's sink once, registering its families after traffic's, in the table's order", () => {
    const { store, limits } = storeAndLimits();
    createTrafficFamilies(store, { breakdown: 'resource', windowGauges: true });
    const traffic = store.familyNames();
    const open = openApis({ store, limits });
    expect(open.map((o) => o.api)).toEqual(APIS.slice(1));

    const names = store.familyNames();
    expect(names.slice(0, traffic.length)).toEqual(traffic);
    const added = names.slice(traffic.length);
    expect(new Set(names).size).toBe(names.length);
    // DVR's families come before the recordings' on /metrics, and each API's families carry its prefix.
    const dvr = added.filter((n) => n.startsWith('cdn_dvr_'));
    const recordings = added.filter((n) => n.startsWith('cdn_recording'));
    expect(dvr.length).toBeGreaterThan(0);
    expect(recordings.length).toBeGreaterThan(0);
    expect(added).toEqual([...dvr, ...recordings]);
  });

  it('polls an API only for the accounts that ask for it', async () => {
    const config = configFrom({
      api: { base_url: 'http://127.0.0.1:9', token: 'demo-token' },
      accounts: [
        { name: 'traffic-only' },
        { name: 'with-dvr', dvr_streams: ['live/main'] },
        { name: 'with-recordings', recordings: true },
        { name: 'both', dvr_streams: ['live/a', 'live/b'], recordings: true },
      ],
    });
    const { store, limits } = storeAndLimits();
    const open = openApis({ store, limits });
    const polled = config.accounts.map((a) => [a.name, open.filter((o) => o.polls(a)).map((o) => o.api)]);
    expect(polled).toEqual([
      ['traffic-only', []],
      ['with-dvr', ['dvr-net']],
      ['with-recordings', ['recorder-cloud']],
      ['both', ['dvr-net', 'recorder-cloud']],
    ]);
  });

  it('has a problem table on the status board for each module that lists problems, and none for the others', () => {
    const registry = new Registry();
    const self = createSelfMetrics(registry, { version: 'test', apis: APIS, defaultMetrics: false });
    const status = new StatusBoard(self, new FakeClock(T0), 'test').status();
    const tables = API_TABLE.flatMap((m) => (m.problems ? [m.problems.table] : []));
    expect(Object.keys(status.problems).sort()).toEqual([...tables].sort());
    for (const t of tables) expect(status.problems[t as keyof typeof status.problems]).toEqual([]);
  });
});
