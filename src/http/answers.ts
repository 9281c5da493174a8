/**
 * What an API answer had that the exporter could not use. Nothing is dropped silently (docs/architecture.md):
 * - a bad field (a string where a count belongs, a negative count, ...) or a record that cannot be attributed is
 *   counted in `cdn_exporter_parse_errors_total{api}` and logged with a few examples, every answer that has one;
 * - a key the API document does not name is ignored (the document may simply be behind the API) but logged once
 *   per API and place (`data[].edge_new_metric`): a renamed field shows up in the log the first time it appears,
 *   without a line per poll. At most MAX_KEYS distinct places are remembered; past that, nothing more is logged.
 */

import type { FieldIssue } from '../http/parse.js';
import type { Logger } from '../log.js';

export interface ParsedAnswer {
  issues: readonly FieldIssue[];
  unknownKeys: readonly string[];
}

const MAX_KEYS = 256;
const EXAMPLES = 5;

export class AnswerAudit {
  private readonly logged = new Set<string>();

  constructor(private readonly countErrors: (api: string, n: number) => void) {}

  /**
   * Counts and logs what `answer` could not give. `unattributed`: records the collector had to drop besides the
   * parser's issues (for example the same resource twice in one answer).
   */
  check(api: string, log: Logger, answer: ParsedAnswer, unattributed = 0): void {
    const bad = answer.issues.length + unattributed;
    if (bad > 0) {
      this.countErrors(api, bad);
      log.warn(
        {
          api,
          bad_fields: answer.issues.length,
          dropped_records: unattributed,
          examples: answer.issues.slice(0, EXAMPLES),
        },
        'API answer had fields that could not be used',
      );
    }
    for (const place of answer.unknownKeys) {
      const key = `${api} ${place}`;
      if (this.logged.has(key) || this.logged.size >= MAX_KEYS) continue;
      this.logged.add(key);
      log.warn({ api, key: place }, 'API answered a key its document does not name; ignored');
    }
  }
}
