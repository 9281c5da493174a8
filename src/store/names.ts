/**
 * Family spec validation. Names follow the Prometheus data model; suffix rules follow what promtool's lint and
 * OpenMetrics expect: a counter's name ends in `_total` (its OpenMetrics family name is the name without it), and
 * a gauge's does not (promtool: "non-counter metrics should not have _total suffix").
 */
import type { FamilySpec } from './types.js';

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const TOTAL = '_total';

/** The family's name in OpenMetrics: a counter's name without `_total`. */
export function openMetricsName(spec: Pick<FamilySpec, 'name' | 'type'>): string {
  return spec.type === 'counter' ? spec.name.slice(0, -TOTAL.length) : spec.name;
}

/** Throws a TypeError naming the problem when the spec is not usable. */
export function validateSpec(spec: FamilySpec): void {
  const { name, type, labelNames, help } = spec;
  if (!METRIC_NAME.test(name)) throw new TypeError(`invalid metric name ${JSON.stringify(name)}`);
  if (type !== 'counter' && type !== 'gauge') {
    throw new TypeError(`${name}: unknown type ${JSON.stringify(type)}`);
  }
  if (type === 'counter') {
    if (!name.endsWith(TOTAL) || !METRIC_NAME.test(name.slice(0, -TOTAL.length))) {
      throw new TypeError(`${name}: a counter's name must end in ${TOTAL}`);
    }
  } else if (name.endsWith(TOTAL)) {
    throw new TypeError(`${name}: only counters' names end in ${TOTAL}`);
  }
  if (typeof help !== 'string') throw new TypeError(`${name}: help must be a string`);
  const seen = new Set<string>();
  for (const label of labelNames) {
    if (!LABEL_NAME.test(label)) throw new TypeError(`${name}: invalid label name ${JSON.stringify(label)}`);
    if (label.startsWith('__'))
      throw new TypeError(`${name}: label name ${label} is reserved (starts with __)`);
    if (seen.has(label)) throw new TypeError(`${name}: label name ${label} appears twice`);
    seen.add(label);
  }
}
