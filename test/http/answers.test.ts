/**
 * What an answer had that could not be used is never dropped silently: bad fields are counted and logged each
 * time; keys the document does not name are logged once per API and place.
 */
import { describe, expect, it } from 'vitest';
import { AnswerAudit } from '../../src/http/answers.js';
import { captureLog } from '../helpers/log-capture.js';

function audit() {
  const counted: Array<[string, number]> = [];
  const { log, lines } = captureLog();
  const a = new AnswerAudit((api, n) => counted.push([api, n]));
  const logged = () => lines.map((l) => JSON.parse(l) as Record<string, unknown>);
  return { a, log, counted, logged };
}

describe('AnswerAudit', () => {
  it('counts bad fields and dropped records per API, and logs a few examples every time', () => {
    const { a, log, counted, logged } = audit();
    const issues = Array.from({ length: 7 }, (_, i) => ({
      path: `data[${i}].edge_status_200`,
      problem: 'expected a count',
    }));
    a.check('metrics', log, { issues, unknownKeys: [] }, 2);
    a.check('dvr-net', log, { issues: issues.slice(0, 1), unknownKeys: [] });
    a.check('recorder-cloud', log, { issues: [], unknownKeys: [] });
    expect(counted).toEqual([
      ['metrics', 9],
      ['dvr-net', 1],
    ]);
    const lines = logged();
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatchObject({ api: 'metrics', bad_fields: 7, dropped_records: 2 });
    expect(lines[0]!.examples).toHaveLength(5);
    expect(lines[1]).toMatchObject({ api: 'dvr-net', bad_fields: 1 });
  });

  it('logs a key the document does not name once per API and place, without counting it as an error', () => {
    const { a, log, counted, logged } = audit();
    for (let i = 0; i < 3; i++) {
      a.check('metrics', log, { issues: [], unknownKeys: ['data[].edge_new_metric', 'extra'] });
      a.check('dvr-net', log, { issues: [], unknownKeys: ['data[].edge_new_metric'] });
    }
    expect(counted).toEqual([]);
    expect(logged().map((l) => `${l.api} ${l.key}`)).toEqual([
      'metrics data[].edge_new_metric',
      'metrics extra',
      'dvr-net data[].edge_new_metric',
    ]);
  });

  it('remembers a bounded number of keys: an answer full of made-up keys cannot grow memory or flood the log', () => {
    const { a, log, logged } = audit();
    const keys = Array.from({ length: 1000 }, (_, i) => `data[].k${i}`);
    a.check('metrics', log, { issues: [], unknownKeys: keys });
    a.check('metrics', log, { issues: [], unknownKeys: keys });
    expect(logged()).toHaveLength(256);
  });
});
