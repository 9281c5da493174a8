/**
 * The parse worker reads an answer element by element (src/offloop/elements.ts). Whatever the body, the
 * result must be the one the whole-body parser gives: the same records, issues and unknown keys, or the same
 * error, word for word. Checked on the simulator's answers (over loopback), on hand-made bodies that stress the
 * byte scan (escapes, nesting, duplicate keys, odd whitespace, bad UTF-8), on every prefix of such a body (a cut
 * answer) and on many single-byte edits of it.
 */
import { describe, expect, it } from 'vitest';
import { MINUTE } from '../../src/clock.js';
import { ApiError } from '../../src/http/errors.js';
import { parseTrafficElements, scanBody } from '../../src/offloop/elements.js';
import { parseTrafficBodyPacked, unpackTrafficResponse } from '../../src/offloop/traffic.js';
import { formatApiTime } from '../../src/simulator/traffic.js';
import { type ParseMetricsOptions, parseTrafficBody } from '../../src/traffic/parse.js';
import type { TrafficResponse } from '../../src/traffic/response.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { startTestSimulator } from '../helpers/per-test.js';
import { plainTraffic } from '../helpers/plain-traffic.js';

const OPTS: ParseMetricsOptions = { account: 'acme', breakdown: 'resource' };
const enc = new TextEncoder();

type Outcome = { ok: ReturnType<typeof plainTraffic> } | { error: { type: string; text: string } };

function outcome(parse: () => TrafficResponse): Outcome {
  try {
    return { ok: plainTraffic(parse()) };
  } catch (err) {
    const text =
      err instanceof ApiError
        ? `${err.api} ${err.kind} ${err.detail} | ${err.message}`
        : err instanceof Error
          ? err.message
          : String(err);
    return { error: { type: err?.constructor?.name ?? typeof err, text } };
  }
}

/** Whole-body parse and element-wise parse (packed, then unpacked as the event loop does) of the same bytes. */
function both(bytes: Uint8Array, opts: ParseMetricsOptions = OPTS) {
  const whole = outcome(() => parseTrafficBody(bytes.slice(), opts));
  const elements = outcome(() => unpackTrafficResponse(parseTrafficBodyPacked(bytes.slice(), opts)));
  return { whole, elements };
}

/** Whether the element-wise path itself read the body (rather than handing it to the whole-body parser). */
function readElementWise(bytes: Uint8Array, opts: ParseMetricsOptions = OPTS): boolean {
  try {
    return parseTrafficElements(bytes, opts, { reserve: () => {}, add: () => {} }) !== undefined;
  } catch {
    return false;
  }
}

function expectSame(text: string | Uint8Array, opts: ParseMetricsOptions = OPTS) {
  const bytes = typeof text === 'string' ? enc.encode(text) : text;
  const { whole, elements } = both(bytes, opts);
  expect(elements, typeof text === 'string' ? text : `${bytes.length} bytes`).toEqual(whole);
  return whole;
}

describe('element-wise parse of the simulator answers', () => {
  it.each(['object', 'flat', 'number'] as const)(
    'gives the whole-body result for every window (request times as %s)',
    async (shape) => {
      const now = Date.UTC(2026, 2, 3, 12, 0);
      const sim = await startTestSimulator({ seed: 7, clock: new FakeClock(now), requestTimeShape: shape });
      let records = 0;
      for (const [from, minutes] of [
        [now - 30 * MINUTE, 1],
        [now - 20 * MINUTE, 10],
        [now - 3 * MINUTE, 2],
      ] as const) {
        const q = `account=demo&start=${formatApiTime(from)}&end=${formatApiTime(from + minutes * MINUTE)}`;
        for (const path of ['/app/metrics/v1/resources', '/app/metrics/v1/']) {
          const res = await fetch(`${sim.url}${path}?${q}`, { headers: { 'CDN-AUTH-TOKEN': 'demo-token' } });
          expect(res.status).toBe(200);
          const bytes = new Uint8Array(await res.arrayBuffer());
          const opts: ParseMetricsOptions = {
            account: 'demo',
            start: from,
            end: from + minutes * MINUTE,
            breakdown: path.endsWith('resources') ? 'resource' : 'account',
          };
          expect(readElementWise(bytes, opts)).toBe(true);
          const whole = expectSame(bytes, opts);
          expect('ok' in whole).toBe(true);
          if ('ok' in whole) records += whole.ok.records.length;
        }
      }
      expect(records).toBeGreaterThan(6);
    },
  );
});

/** Hand-made bodies: valid ones the scan must read itself, then ones it must leave to the whole-body parser. */
const NASTY_VALID: string[] = [
  // Duplicate keys in an element and at the top level: the last value counts, at the first one's place.
  '{"account":"x","data":[{"resource":"1","edge_status_200":1,"edge_status_200":2,"resource":"2"}],"account":"acme"}',
  // Whitespace JSON allows, everywhere it allows it.
  ' \t\r\n{ \r\n"data" \t: \n[ \r{ "resource" : "1" , "edge_requests_total" : 5 } \n, \t{"resource":"2"}\r\n] , "metrics":[ ] }\n\t ',
  // Unicode escapes in keys (the top-level `data` too), values and element keys; surrogate pairs; raw UTF-8.
  '{"d\\u0061ta":[{"resource":"\\u00e9\\ud83d\\ude00","resource_name":"r\u00e9s \u{1f600}","edge_status_\\u0032\\u0030\\u0030":7}]}',
  // Escaped quotes and backslashes, and brackets inside strings.
  '{"data":[{"resource":"a\\\\","cname":"q\\"]}[{\\\\\\"","resource_name":"}]"}],"zz\\"":"[{"}',
  // Nested arrays and objects in elements; elements that are not objects.
  '{"data":[{"resource":"1","x":[[1,[2,{"a":[]}]],{"b":{"c":[[]]}}],"edge_request_time":{"0_250k":0.5,"1M+":[1]}},[1,[2]],"s",7,null,true,false,{},[]]}',
  // __proto__ and integer-like keys, at the top level and in elements.
  '{"__proto__":{"data":1},"10":1,"2":2,"data":[{"__proto__":5,"resource":"1","7":1}],"account":"acme"}',
  // Numbers: exponents, negatives, out of range, fractions.
  '{"data":[{"resource":"1","edge_requests_total":1e2,"origin_requests_total":-0,"edge_bandwidth":1e400,"edge_hit_ratio":0.5e0,"edge_hit_bytes":-1.5E-3}]}',
  // Values of the wrong type everywhere.
  '{"start":5,"end":"soon","account":["a"],"metrics":{"a":1},"data":[{"resource":1,"edge_status_200":"2","edge_request_time":"x"}]}',
  // An element without resource (dropped under breakdown resource), unknown keys, an empty data array.
  '{"data":[{"resource_name":"r"},{"resource":"","x":1}],"extra":{"y":[1,2]}}',
  '{"data":[]}',
  '{"data":[ ]}',
  '{"data":[{"resource":"1"}],"description":"ignored"}',
  // Strings holding control characters as escapes, and a string right against the closing bracket.
  '{"data":[{"resource":"a\\n\\t\\u0000\\b"},"]"]}',
  // The echo matches.
  '{"account":"acme","start":"2026-01-01T18:00:00","end":"2026-01-01T18:01:00","data":[{"resource":"1"}]}',
];

const NOT_READ_ELEMENT_WISE: string[] = [
  '',
  '   ',
  'null',
  '[]',
  '"data"',
  '{}',
  '{"data":{}}',
  '{"data":"x","description":"no such account"}',
  '{"data":null}',
  '{"metrics":[]}',
  // data twice: the last counts, and the first must still be valid JSON.
  '{"data":[{"resource":"1"}],"data":[{"resource":"2"}]}',
  '{"data":[{"resource":"1"}],"data":[{"resource":"2"',
  '{"data":[1,}],"data":[]}',
  // A byte order mark (the decoder drops it).
  '\ufeff{"data":[{"resource":"1"}]}',
  // Not JSON: trailing commas, missing commas, bad literals, non-JSON whitespace, raw control characters.
  '{"data":[{"resource":"1"},]}',
  '{"data":[{"resource":"1"}],}',
  '{"data":[{"resource":"1"} {"resource":"2"}]}',
  '{"data":[{"resource":"1" "cname":"c"}]}',
  '{"data":[tru]}',
  '{"data":[01]}',
  '{"data":[1.]}',
  '{"data":[-]}',
  '{"data":[NaN]}',
  '{"data":[\u00a0{"resource":"1"}]}',
  '{"data":[{"resource":"a\nb"}]}',
  '{"data":[{"resource":"1"}]} x',
  '{"data":[{"resource":"1"}]}}',
  '{"data":[{"resource":"1"]]}',
  '{"data":[{"resource":"1"}}]}',
  '{"data":[[}]]}',
  "{'data':[]}",
  '{"data":[{"resource":"1"}]',
  // The echo does not match: refused, whatever the rest.
  '{"account":"other","data":[{"resource":"1"}]}',
  '{"start":"2026-01-01T18:00:00","data":[{"resource":"1"}]}',
];

/** One valid body holding the nasty parts of the bodies above. */
function combinedBody(): Uint8Array {
  const text = [
    '{"account":"acme", "extra":[1,{"a":"]"}],\r\n"d\\u0061ta":[',
    '{"resource":"1","edge_status_200":1,"edge_status_200":2,"resource":"2"},',
    '\t{ "resource" : "\\u00e9\\ud83d\\ude00" , "resource_name":"r\u00e9s \u{1f600}","edge_status_\\u0032\\u0030\\u0030":7 } ,',
    '{"resource":"a\\\\","cname":"q\\"]}[{\\\\\\"","resource_name":"}]"},',
    '{"resource":"1","x":[[1,[2,{"a":[]}]],{"b":{"c":[[]]}}],"edge_request_time":{"0_250k":0.5,"1M+":[1]}},',
    '[1,[2]],"s",7,null,true,false,{},[],',
    '{"__proto__":5,"resource":"1","7":1,"edge_requests_total":1e2,"edge_bandwidth":1e400,"edge_hit_ratio":0.5e0},',
    '{"resource":"a\\n\\t\\u0000\\b"},"]",{"resource_name":"r"}',
    '],"10":1,"__proto__":{"data":1},"\\u0078":"\\""}',
  ].join('');
  JSON.parse(text);
  return enc.encode(text);
}

describe('element-wise parse of hand-made bodies', () => {
  it.each(NASTY_VALID)('reads %s itself, to the whole-body result', (text) => {
    const opts = text.includes('"start"') ? { ...OPTS, start: Date.UTC(2026, 0, 1, 18, 0) } : OPTS;
    expect(scanBody(enc.encode(text))).toBeDefined();
    expect(readElementWise(enc.encode(text), opts)).toBe(true);
    expectSame(text, opts);
  });

  it.each(NOT_READ_ELEMENT_WISE)('leaves %j to the whole-body parser, with its result', (text) => {
    const opts = text.includes('"start"') ? { ...OPTS, start: Date.UTC(2026, 0, 1, 19, 0) } : OPTS;
    expect(readElementWise(enc.encode(text), opts)).toBe(false);
    expectSame(text, opts);
  });

  it('reads bad UTF-8 in strings as the whole-body parser does, and leaves it elsewhere to it', () => {
    const head = enc.encode('{"data":[{"resource":"a');
    const tail = enc.encode('b","x":1}]}');
    for (const bad of [[0xff], [0xc3], [0xe2, 0x82], [0xf0, 0x9f, 0x98], [0xed, 0xa0, 0x80], [0xc0, 0xaf]]) {
      const inString = new Uint8Array([...head, ...bad, ...tail]);
      expect(readElementWise(inString)).toBe(true);
      const whole = expectSame(inString);
      expect('ok' in whole && whole.ok.records[0]?.resource).toMatch(/^a\uFFFD+b$/);
      const inGlue = new Uint8Array([
        ...enc.encode('{"data":['),
        ...bad,
        ...enc.encode('{"resource":"1"}]}'),
      ]);
      expect(readElementWise(inGlue)).toBe(false);
      expectSame(inGlue);
    }
  });

  it('gives the whole-body result for every prefix of a body (a cut answer)', () => {
    const body = combinedBody();
    expect(readElementWise(body)).toBe(true);
    const full = expectSame(body);
    expect('ok' in full && full.ok.records.length).toBeGreaterThan(5);
    for (let cut = 0; cut < body.length; cut++) {
      const { whole, elements: viaElements } = both(body.subarray(0, cut));
      expect(viaElements, `cut at ${cut}`).toEqual(whole);
    }
  });

  it('gives the whole-body result for single-byte edits of a body', () => {
    const body = combinedBody();
    // A deterministic stream of edits: replace, insert or delete one byte, the new byte often a structural one.
    const alphabet = enc.encode('{}[]",:\\ \t\n0123456789eE-+.tfnulrsaxd\u0000');
    let seed = 12345;
    const next = (n: number) => {
      seed = (seed * 1103515245 + 12345) >>> 0;
      return (seed >>> 8) % n;
    };
    let differentFromOriginal = 0;
    for (let k = 0; k < 3000; k++) {
      const at = next(body.length);
      const byte = alphabet[next(alphabet.length)]!;
      const op = next(3);
      const edited =
        op === 0
          ? Uint8Array.from(body, (b, i) => (i === at ? byte : b))
          : op === 1
            ? new Uint8Array([...body.subarray(0, at), byte, ...body.subarray(at)])
            : new Uint8Array([...body.subarray(0, at), ...body.subarray(at + 1)]);
      const { whole, elements } = both(edited);
      expect(elements, `edit ${k}: ${new TextDecoder().decode(edited)}`).toEqual(whole);
      if ('error' in whole) differentFromOriginal++;
    }
    // The edits reach both outcomes: some bodies stay JSON, many do not.
    expect(differentFromOriginal).toBeGreaterThan(300);
    expect(differentFromOriginal).toBeLessThan(3000);
  });
});
