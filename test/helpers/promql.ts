/**
 * A small PromQL scanner for contract checks (not a parser): the metric names an expression reads, the label
 * names its selectors match on, and the ranges it uses. Good enough for the expressions this project writes:
 * selectors without `}` inside label values, no string literals outside label matchers and function arguments.
 */

const KEYWORDS = new Set([
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'bool',
  'and',
  'or',
  'unless',
  'offset',
  'atan2',
  'inf',
  'nan',
]);

/** Grafana and Prometheus template variables, in both `$x` and `${x}` forms. */
const VARIABLE = /\$\{?\w+\}?/g;
const STRING = /"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'/g;

export interface Selector {
  name: string;
  labels: string[];
}

/** `name{matchers}` and bare `name` selectors (functions, keywords and grouping labels are not names). */
export function selectors(expr: string): Selector[] {
  const out: Selector[] = [];
  const withMatchers = /(?<![\w:$])([a-zA-Z_:][\w:]*)\s*\{([^}]*)\}/g;
  for (const m of expr.matchAll(withMatchers)) {
    const labels = [...m[2]!.replace(STRING, '""').matchAll(/([a-zA-Z_]\w*)\s*(=~|!~|!=|=)/g)].map(
      (l) => l[1]!,
    );
    out.push({ name: m[1]!, labels });
  }
  const bare = expr
    .replace(STRING, '""')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(VARIABLE, ' ')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ');
  for (const m of bare.matchAll(/(?<![\w:.$])([a-zA-Z_:][\w:]*)(?![\w:])(?!\s*\()/g)) {
    const name = m[1]!;
    if (KEYWORDS.has(name.toLowerCase())) continue;
    if (out.some((s) => s.name === name)) continue;
    out.push({ name, labels: [] });
  }
  return out;
}

export function metricNames(expr: string): string[] {
  return [...new Set(selectors(expr).map((s) => s.name))].sort();
}

export interface RangeUse {
  /** The metric the range applies to (the selector just before `[`), or '' for a subquery. */
  metric: string;
  /** The range as written: `$window_range`, `20m`, ...; for a subquery `[1h:5m]`, `1h`. */
  range: string;
  /** A subquery's resolution (`5m` of `[1h:5m]`; '' for `[1h:]`); undefined for a range vector. */
  step?: string;
}

export function ranges(expr: string): RangeUse[] {
  const out: RangeUse[] = [];
  for (const m of expr.matchAll(/(?:([a-zA-Z_:][\w:]*)\s*(?:\{[^}]*\})?\s*)?\[([^\]]+)\]/g)) {
    const [range, step] = m[2]!.split(':');
    out.push({
      metric: m[1] ?? '',
      range: range!.trim(),
      ...(step === undefined ? {} : { step: step.trim() }),
    });
  }
  return out;
}

const UNIT_SECONDS: Record<string, number> = {
  ms: 0.001,
  s: 1,
  m: 60,
  h: 3600,
  d: 86400,
  w: 604800,
  y: 31536000,
};

/** Seconds of a Prometheus duration literal (`90s`, `1h30m`), or undefined when it is not one. */
export function durationSeconds(text: string): number | undefined {
  if (!/^(\d+(ms|s|m|h|d|w|y))+$/.test(text)) return undefined;
  let total = 0;
  for (const m of text.matchAll(/(\d+)(ms|s|m|h|d|w|y)/g)) total += Number(m[1]) * UNIT_SECONDS[m[2]!]!;
  return total;
}
