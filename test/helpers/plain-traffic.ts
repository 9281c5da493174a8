/** A parsed traffic answer as plain data, for the tests that compare two parses of one body. */
import type { TrafficResponse } from '../../src/traffic/response.js';

/** `r` with its maps as arrays of entries, so that two responses compare whatever their maps are made of. */
export function plainTraffic(r: TrafficResponse) {
  const side = (s: TrafficResponse['records'][number]['edge']) => ({
    ...s,
    codes: [...s.codes],
    classes: [...s.classes],
    requestTimeSeconds: [...s.requestTimeSeconds],
  });
  return { ...r, records: r.records.map((x) => ({ ...x, edge: side(x.edge), origin: side(x.origin) })) };
}
