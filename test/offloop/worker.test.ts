/**
 * The parse worker names no API: a request names its codec's module (AnswerCodec.module) and the worker imports
 * it (src/offloop/worker.ts). So each codec must say where it lives, and a request naming anything else is an
 * error the pool reports, not a worker that hangs or imports what it is told.
 *
 * The worker runs from the build (dist/), which `npm test` makes before the tests run.
 */
import { describe, expect, it } from 'vitest';
import { inventoryCodec } from '../../src/discovery/codec.js';
import { dvrCodec } from '../../src/dvr/codec.js';
import { dvrModule } from '../../src/dvr/module.js';
import { API_TABLE } from '../../src/exporter/api-table.js';
import { ANSWER_POOL } from '../../src/offloop/pool.js';
import { trafficCodec } from '../../src/offloop/traffic.js';
import { recordingsModule } from '../../src/recordings/module.js';
import { entry } from '../helpers/answer-fixtures.js';
import { builtPools } from '../helpers/parse-pools.js';

const { pool } = builtPools();
const utf8 = new TextEncoder();

const CODECS = [trafficCodec, inventoryCodec, ...API_TABLE.map((m) => m.codec)];

describe('AnswerCodec.module: where the worker finds each codec', () => {
  it.each(CODECS.map((c) => [c.api, c] as const))(
    '%s: its module under src/ exports it',
    async (_api, codec) => {
      const source = `../../src/${codec.module.replace(/\.js$/, '.ts')}`;
      const exported: Record<string, unknown> = await import(source);
      expect(Object.values(exported)).toContain(codec);
    },
  );

  it('every module of the API table is in it, with its own codec', () => {
    expect(API_TABLE.map((m) => [m.api, m.codec.api])).toEqual([
      [dvrModule.api, 'dvr-net'],
      [recordingsModule.api, 'recorder-cloud'],
    ]);
  });

  it('a codec naming a module the worker must not import is an error of that parse, and the worker goes on', async () => {
    const p = pool(ANSWER_POOL);
    const elsewhere = { ...dvrCodec, module: '../../../etc/passwd.js' };
    await expect(p.parser(elsewhere)(utf8.encode('{}'), 'live/main')).rejects.toThrow(
      /answer parse worker: .*no parser for the dvr-net API/,
    );
    const missing = { ...dvrCodec, module: 'dvr/nothing-here.js' };
    await expect(p.parser(missing)(utf8.encode('{}'), 'live/main')).rejects.toThrow(/answer parse worker: /);
    const body = JSON.stringify({ status: 'Completed', stream_name: 'live/main', data: [entry('h1')] });
    await expect(p.parser(dvrCodec)(utf8.encode(body), 'live/main')).resolves.toMatchObject({
      entries: [{ host: 'h1' }],
    });
    expect(p.started).toBe(1);
  });
});
