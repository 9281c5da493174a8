/**
 * What Grafana would send to Prometheus for the shipped dashboards (grafana/dashboards/*.json, the generated
 * files users import): every panel query and every label_values() variable, with the template variables
 * replaced the way Grafana replaces them.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const DASHBOARD_DIR = fileURLToPath(new URL('../../grafana/dashboards/', import.meta.url));

export interface PanelQuery {
  dashboard: string;
  panel: string;
  /** The target's refId (A, B, ...). */
  ref: string;
  expr: string;
}

export interface VariableQuery {
  dashboard: string;
  name: string;
  /** The series selector of label_values(selector, label); may reference earlier variables. */
  match: string;
  label: string;
}

export interface Dashboard {
  uid: string;
  file: string;
  panels: PanelQuery[];
  variables: VariableQuery[];
  /** Names of every template variable, in order (query, custom, datasource). */
  variableNames: string[];
}

interface RawPanel {
  title?: string;
  type?: string;
  panels?: RawPanel[];
  targets?: { expr?: string; refId?: string; hide?: boolean }[];
}

interface RawDashboard {
  uid: string;
  panels: RawPanel[];
  templating?: { list: { name: string; type: string; query?: unknown; definition?: string }[] };
}

function flatten(panels: RawPanel[]): RawPanel[] {
  // Collapsed rows carry their panels inside the row.
  return panels.flatMap((p) => [p, ...flatten(p.panels ?? [])]);
}

const LABEL_VALUES = /^label_values\(\s*(.+?)\s*,\s*(\w+)\s*\)$/s;

export function loadDashboards(dir = DASHBOARD_DIR): Dashboard[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((file) => {
      const d = JSON.parse(readFileSync(`${dir}/${file}`, 'utf8')) as RawDashboard;
      const panels = flatten(d.panels).flatMap((p) =>
        (p.targets ?? [])
          .filter((t) => !t.hide && t.expr)
          .map((t) => ({
            dashboard: d.uid,
            panel: p.title ?? '(untitled)',
            ref: t.refId ?? '',
            expr: t.expr!,
          })),
      );
      const list = d.templating?.list ?? [];
      const variables = list.flatMap((v) => {
        if (v.type !== 'query') return [];
        const text = v.definition ?? (typeof v.query === 'string' ? v.query : '');
        const m = LABEL_VALUES.exec(text);
        if (!m) throw new Error(`${file}: variable ${v.name} is not label_values(...): ${text}`);
        return [{ dashboard: d.uid, name: v.name, match: m[1]!, label: m[2]! }];
      });
      return { uid: d.uid, file, panels, variables, variableNames: list.map((v) => v.name) };
    });
}

/**
 * Grafana's interpolation: `$name`, `${name}` and `[[name]]`. A name missing from `values` is an error, so a
 * dashboard that gains a variable this test does not know about fails loudly instead of sending `$x`.
 */
export function interpolate(expr: string, values: Record<string, string>): string {
  return expr.replace(
    /\$\{(\w+)(?::\w+)?\}|\$(\w+)|\[\[(\w+)\]\]/g,
    (_m, a?: string, b?: string, c?: string) => {
      const name = (a ?? b ?? c)!;
      const v = values[name];
      if (v === undefined) throw new Error(`no value for dashboard variable $${name} in: ${expr}`);
      return v;
    },
  );
}

/** Grafana's regex formatting of a multi-value selection: one value as is, several as (a|b), escaped. */
export function regexOf(values: string[]): string {
  const esc = values.map((v) => v.replace(/[\\^$.|?*+()[\]{}]/g, '\\\\$&'));
  return esc.length === 1 ? esc[0]! : `(${esc.join('|')})`;
}
