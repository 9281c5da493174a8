/**
 * Parsers of the answers to the write calls of test/helpers/api-writes.ts (DELETE of a DVR slice, PUT of a
 * recording setting), with the tolerance of the product's parsers.
 */
import { describeValue, type FieldIssue, isRecord, malformed, ParseReport } from '../../src/http/parse.js';

/** A successful DELETE: `status` and the echoed parameters. */
export interface DvrDeleteResponse {
  status?: string;
  streamName?: string;
  /** The echoed request parameters (host, from_ts, duration_sec, to_ts, all), as sent back. */
  echoed: Record<string, unknown>;
  issues: FieldIssue[];
}

/** Parses a DELETE answer; the top level must be an object (an empty body is accepted as success). */
export function parseDvrDeleteResponse(raw: unknown): DvrDeleteResponse {
  if (raw === undefined) return { echoed: {}, issues: [] };
  if (!isRecord(raw)) throw malformed('dvr-net', `top level is ${describeValue(raw)}, not an object`);
  const report = new ParseReport();
  const { status, stream_name, ...echoed } = raw;
  const out: DvrDeleteResponse = { echoed, issues: report.issues };
  if (status !== undefined) out.status = report.string(status, 'status');
  if (stream_name !== undefined) out.streamName = report.string(stream_name, 'stream_name');
  return out;
}

/** The answer of a create (PUT): `{id}`. */
export function parseCreateResponse(raw: unknown): { id: string } {
  if (!isRecord(raw)) throw malformed('recorder-cloud', `top level is ${describeValue(raw)}, not an object`);
  if (typeof raw.id === 'string' && raw.id !== '') return { id: raw.id };
  if (typeof raw.id === 'number' && Number.isInteger(raw.id)) return { id: String(raw.id) };
  throw malformed('recorder-cloud', `no id in the create answer (got ${describeValue(raw.id)})`);
}
