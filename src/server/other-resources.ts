/**
 * How the exporter's pages and the dashboards (grafana/dashboards-src/common.ts) name the series of the folded
 * resources, `resource="__other__"` (src/traffic/fold.ts OTHER; docs/metrics.md, "Where `__other__` shows"): never
 * as a resource, but as the resources without series of their own, counted together.
 */

/** The words for the folded resources, where a resource id would be. */
export const OTHER_TEXT = 'other resources';

/** `other resources (14,900)`: the folded resources and how many they are. */
export function otherResources(count: number): string {
  return `${OTHER_TEXT} (${count.toLocaleString('en-US')})`;
}
