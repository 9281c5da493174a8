/**
 * Typed helpers over @grafana/grafana-foundation-sdk 0.0.21 for the project's dashboards.
 *
 * Contracts every panel built here keeps (test/dashboards/lint.test.ts checks them on the generated JSON):
 * - a description and an explicit unit;
 * - the datasource is the `$datasource` variable, on the panel and on each query;
 * - counters that step once per traffic window (5 min by default, 10 min while catching up) are read with
 *   `[$window_range]` (default 20m, never below twice the largest window), and so are the exporter's own API
 *   request counters (a request per window and account is too few for `$__rate_interval`); process counters
 *   use `[$__rate_interval]`. No bare small range anywhere.
 */

import type { Builder } from '@grafana/grafana-foundation-sdk/cog';
import {
  BigValueColorMode,
  BigValueGraphMode,
  BigValueTextMode,
  LegendDisplayMode,
  LegendPlacement,
  ReduceDataOptionsBuilder,
  StackingConfigBuilder,
  StackingMode,
  TableSortByFieldStateBuilder,
  VisibilityMode,
  VizLegendOptionsBuilder,
} from '@grafana/grafana-foundation-sdk/common';
import type {
  Dashboard,
  Panel,
  RowPanel,
  Threshold,
  ValueMapping,
  VariableModel,
} from '@grafana/grafana-foundation-sdk/dashboard';
import {
  CustomVariableBuilder,
  DashboardBuilder,
  DashboardCursorSync,
  DashboardLinkBuilder,
  DashboardLinkType,
  DatasourceVariableBuilder,
  MappingType,
  QueryVariableBuilder,
  RowBuilder,
  ThresholdsConfigBuilder,
  ThresholdsMode,
  VariableRefresh,
  VariableSort,
} from '@grafana/grafana-foundation-sdk/dashboard';
import { DataqueryBuilder, PromQueryFormat } from '@grafana/grafana-foundation-sdk/prometheus';
import { PanelBuilder as StatPanelBuilder } from '@grafana/grafana-foundation-sdk/stat';
import { PanelBuilder as StateTimelinePanelBuilder } from '@grafana/grafana-foundation-sdk/statetimeline';
import { PanelBuilder as TablePanelBuilder } from '@grafana/grafana-foundation-sdk/table';
import { PanelBuilder as TimeseriesPanelBuilder } from '@grafana/grafana-foundation-sdk/timeseries';
import { OTHER_TEXT } from '../../src/server/other-resources.js';
import { OTHER } from '../../src/traffic/fold.js';

export type { Dashboard };

/** Every panel and query reads from the dashboard's `datasource` variable. */
// biome-ignore lint/suspicious/noTemplateCurlyInString: Grafana's variable syntax, not a JS template.
export const DATASOURCE = { type: 'prometheus', uid: '${datasource}' } as const;

/**
 * Range for rate()/increase() over counters that step once per traffic window. docs/metrics.md, "How traffic is counted": a range
 * shorter than two windows shows zeros and spikes; the largest window is 10 minutes, hence 20m at least.
 */
export const WINDOW_RANGE = '$window_range';
/** Range for counters that move continuously (the process's). */
export const RATE_INTERVAL = '$__rate_interval';
/** Choices of the `window_range` variable: none below twice the largest window. */
export const WINDOW_RANGE_CHOICES = ['20m', '30m', '1h', '3h', '6h', '1d'] as const;

/** One PromQL query of a panel. */
export interface Query {
  expr: string;
  /** Legend (time series) or the column name of this query's value (tables). */
  legend?: string;
  /** Instant query (stats, tables); otherwise a range query. */
  instant?: boolean;
}

export interface PanelSpec {
  title: string;
  /** What the panel answers; shown as the panel's (i) tooltip. Required. */
  description: string;
  /** Grafana unit id (`reqps`, `Bps`, `percentunit`, `s`, `none`, ...). Required. */
  unit: string;
  queries: Query[];
  /** Width in grid columns (of 24) and height in rows. */
  w?: number;
  h?: number;
  min?: number;
  max?: number;
  decimals?: number;
  /** Absolute thresholds: [value, color] pairs above the base color. */
  thresholds?: readonly (readonly [number, string])[];
  /** Color below the first threshold; green unless low values are the bad ones. */
  thresholdBase?: string;
  /** Value to text mappings, for 0/1 gauges. */
  mappings?: Record<string, { text: string; color: string }>;
}

export type AnyPanelBuilder = { build(): Panel };

const REF_IDS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';

function targets(queries: Query[], table: boolean): DataqueryBuilder[] {
  return queries.map((q, i) => {
    const b = new DataqueryBuilder()
      .refId(REF_IDS[i] ?? `Q${i}`)
      .datasource({ ...DATASOURCE })
      .expr(q.expr);
    if (q.legend !== undefined && !table) b.legendFormat(q.legend);
    if (q.instant || table) b.instant();
    else b.range();
    if (table) b.format(PromQueryFormat.Table);
    return b;
  });
}

function thresholds(spec: Pick<PanelSpec, 'thresholds' | 'thresholdBase'>): ThresholdsConfigBuilder {
  const steps: Threshold[] = [{ value: null, color: spec.thresholdBase ?? 'green' }];
  for (const [value, color] of spec.thresholds ?? []) steps.push({ value, color });
  return new ThresholdsConfigBuilder().mode(ThresholdsMode.Absolute).steps(steps);
}

function mappings(spec: Pick<PanelSpec, 'mappings'>): ValueMapping[] {
  if (!spec.mappings) return [];
  return [{ type: MappingType.ValueToText, options: { ...spec.mappings } }];
}

/**
 * Fields common to every kind of panel builder. The SDK's panel builders share these methods but no interface,
 * so this takes the subset it needs.
 */
interface CommonBuilder<T> {
  title(t: string): T;
  description(d: string): T;
  unit(u: string): T;
  datasource(d: { type: string; uid: string }): T;
  span(w: number): T;
  height(h: number): T;
  min(n: number): T;
  max(n: number): T;
  decimals(n: number): T;
  thresholds(t: ThresholdsConfigBuilder): T;
  mappings(m: ValueMapping[]): T;
  withTarget(t: DataqueryBuilder): T;
}

function common<T extends CommonBuilder<T>>(b: T, spec: PanelSpec, table = false): T {
  b.title(spec.title)
    .description(spec.description)
    .unit(spec.unit)
    .datasource({ ...DATASOURCE })
    .span(spec.w ?? 12)
    .height(spec.h ?? 8)
    .thresholds(thresholds(spec));
  if (spec.min !== undefined) b.min(spec.min);
  if (spec.max !== undefined) b.max(spec.max);
  if (spec.decimals !== undefined) b.decimals(spec.decimals);
  if (spec.mappings) b.mappings(mappings(spec));
  for (const t of targets(spec.queries, table)) b.withTarget(t);
  return b;
}

function legend(): VizLegendOptionsBuilder {
  return new VizLegendOptionsBuilder()
    .showLegend(true)
    .displayMode(LegendDisplayMode.Table)
    .placement(LegendPlacement.Bottom)
    .calcs(['mean', 'max', 'lastNotNull']);
}

export function timeseries(spec: PanelSpec & { stack?: boolean }): TimeseriesPanelBuilder {
  const b = common(new TimeseriesPanelBuilder(), spec).legend(legend()).fillOpacity(10).lineWidth(1);
  if (spec.stack) b.stacking(new StackingConfigBuilder().mode(StackingMode.Normal)).fillOpacity(40);
  return b;
}

export function stat(spec: PanelSpec & { graph?: boolean }): StatPanelBuilder {
  return common(new StatPanelBuilder(), { w: 4, h: 4, ...spec })
    .reduceOptions(new ReduceDataOptionsBuilder().calcs(['lastNotNull']).values(false))
    .graphMode(spec.graph ? BigValueGraphMode.Area : BigValueGraphMode.None)
    .colorMode(spec.thresholds ? BigValueColorMode.Background : BigValueColorMode.Value)
    .textMode(BigValueTextMode.Auto);
}

export function stateTimeline(spec: PanelSpec): StateTimelinePanelBuilder {
  return common(new StateTimelinePanelBuilder(), spec).showValue(VisibilityMode.Never);
}

export interface Column {
  /** Column title replacing Grafana's `Value #<refId>`. */
  name: string;
  unit: string;
  thresholds?: readonly (readonly [number, string])[];
  thresholdBase?: string;
  mappings?: Record<string, { text: string; color: string }>;
}

/**
 * A table of instant queries merged on their labels: one row per label set, one column per query (in order of
 * `columns`). Labels listed in `hide` are dropped (Time always is).
 */
export function table(
  spec: PanelSpec & { columns: Column[]; hide?: string[]; sortBy?: { column: string; desc: boolean } },
): TablePanelBuilder {
  const b = common(new TablePanelBuilder(), { h: 10, w: 24, ...spec }, true);
  const rename: Record<string, string> = {};
  spec.columns.forEach((c, i) => {
    const field = spec.columns.length === 1 ? 'Value' : `Value #${REF_IDS[i]}`;
    rename[field] = c.name;
    const props: { id: string; value: unknown }[] = [{ id: 'unit', value: c.unit }];
    if (c.thresholds) {
      props.push({
        id: 'thresholds',
        value: thresholds(c).build(),
      });
      props.push({ id: 'custom.cellOptions', value: { type: 'color-background' } });
    }
    if (c.mappings) props.push({ id: 'mappings', value: mappings(c) });
    b.overrideByName(c.name, props);
  });
  const exclude: Record<string, boolean> = { Time: true };
  for (const h of spec.hide ?? []) exclude[h] = true;
  b.withTransformation({ id: 'merge', options: {} });
  b.withTransformation({ id: 'organize', options: { excludeByName: exclude, renameByName: rename } });
  if (spec.sortBy) {
    b.sortBy([new TableSortByFieldStateBuilder().displayName(spec.sortBy.column).desc(spec.sortBy.desc)]);
  }
  return b;
}

function datasourceVariable(): DatasourceVariableBuilder {
  return new DatasourceVariableBuilder('datasource')
    .label('Data source')
    .type('prometheus')
    .current({ selected: true, text: 'Prometheus', value: 'prometheus' });
}

/**
 * A label's values from a metric, multi-select with All. All is `.*`, which also matches an absent label (the
 * `resource` label is absent with `breakdown: account`).
 */
export function labelVariable(
  name: string,
  label: string,
  source: string,
  text = name,
): QueryVariableBuilder {
  // The plain-string form: every Grafana version reads it (newer ones migrate it to their editor's model).
  const query = `label_values(${source}, ${label})`;
  return new QueryVariableBuilder(name)
    .label(text)
    .datasource({ ...DATASOURCE })
    .query(query)
    .definition(query)
    .refresh(VariableRefresh.OnTimeRangeChanged)
    .sort(VariableSort.AlphabeticalAsc)
    .multi(true)
    .includeAll(true)
    .allValue('.*')
    .current({ selected: true, text: ['All'], value: ['$__all'] });
}

export function windowRangeVariable(): CustomVariableBuilder {
  return new CustomVariableBuilder('window_range')
    .label('Rate range')
    .description(
      'Range of rate() and increase() over the traffic counters. They step once per window (up to 10 minutes), ' +
        'so anything below 20m shows zeros and spikes.',
    )
    .values(WINDOW_RANGE_CHOICES.join(','))
    .options(WINDOW_RANGE_CHOICES.map((v) => ({ selected: v === '20m', text: v, value: v })))
    .current({ selected: true, text: '20m', value: '20m' });
}

export interface Row {
  title: string;
  panels: AnyPanelBuilder[];
}

export interface DashboardSpec {
  uid: string;
  title: string;
  description: string;
  /** The dashboard's own variables, after the data source every dashboard starts with. */
  variables: Builder<VariableModel>[];
  rows: Row[];
  /** The range it opens on: the last 6 hours, in the browser's time zone, when absent. */
  opensOn?: { time: { from: string; to: string }; timezone: string };
}

export const TAG = 'cdn-exporter';

/**
 * Builds the frame every dashboard shares (tag, links to the others, data source variable, opening range) around
 * its own variables and rows, and numbers its panels 1..n in order (the SDK leaves ids unset or 0), so the JSON
 * is stable across runs.
 */
export function dashboard(spec: DashboardSpec): Dashboard {
  const b = new DashboardBuilder(spec.title)
    .uid(spec.uid)
    .description(spec.description)
    .tags([TAG])
    .editable()
    .tooltip(DashboardCursorSync.Crosshair)
    .time(spec.opensOn?.time ?? { from: 'now-6h', to: 'now' })
    .refresh('1m')
    .timezone(spec.opensOn?.timezone ?? 'browser')
    .link(
      new DashboardLinkBuilder('CDN dashboards')
        .type(DashboardLinkType.Dashboards)
        .tags([TAG])
        .asDropdown(true)
        .includeVars(false)
        .keepTime(true),
    );
  for (const v of [datasourceVariable(), ...spec.variables]) b.withVariable(v);
  for (const row of spec.rows) {
    b.withRow(new RowBuilder(row.title));
    for (const p of row.panels) b.withPanel(p);
  }
  const d = b.build();
  let id = 0;
  for (const p of d.panels ?? []) {
    (p as Panel | RowPanel).id = ++id;
  }
  return d;
}

/** The file text of a dashboard: 2-space JSON and a final newline. */
export function render(d: Dashboard): string {
  return `${JSON.stringify(d, null, 2)}\n`;
}

/** Value mappings for 0/1 gauges. */
export const UP_DOWN = {
  '0': { text: 'down', color: 'red' },
  '1': { text: 'up', color: 'green' },
} as const satisfies Record<string, { text: string; color: string }>;
export const YES_NO = {
  '0': { text: 'no', color: 'text' },
  '1': { text: 'yes', color: 'text' },
} as const satisfies Record<string, { text: string; color: string }>;

/** The folded series' `resource` label, and the words the dashboards show for it. */
export { OTHER, OTHER_TEXT };

/**
 * The CDN traffic dashboard's panel that says, per account, how many resources have series of their own and how
 * many the OTHER_TEXT row stands for; the tables that show that row name it.
 */
export const RESOURCES_PER_ACCOUNT = 'Resources per account';

/**
 * `expr` with `resource="__other__"` (OTHER: the folded resources of an account, counted together) shown as
 * OTHER_TEXT (label_replace matches the whole value), so a table or a
 * legend by resource names the folded resources for what they are. Every query of one table must be wrapped
 * alike, so that the table's merge joins their rows.
 */
export function otherNamed(expr: string): string {
  return `label_replace(\n${expr},\n"resource", "${OTHER_TEXT}", "resource", "${OTHER}"\n)`;
}

/** Labels that tables never show: the scrape's own and the metric name. */
export const SCRAPE_LABELS = ['__name__', 'job', 'instance'] as const;
