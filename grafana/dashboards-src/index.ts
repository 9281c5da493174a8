/**
 * The project's dashboards: one per concern, each with a stable uid and file name under grafana/dashboards/.
 * `npm run dashboards` (scripts/dashboards.ts) writes them; test/dashboards/generated.test.ts fails when the
 * committed JSON differs from what these builders produce.
 */
import { type Dashboard, render } from './common.js';
import * as cost from './cost.js';
import * as dvr from './dvr.js';
import * as exporter from './exporter.js';
import * as recordings from './recordings.js';
import * as traffic from './traffic.js';

export interface DashboardSource {
  uid: string;
  /** File name under grafana/dashboards/. */
  file: string;
  build(): Dashboard;
}

export const DASHBOARDS: readonly DashboardSource[] = [traffic, dvr, recordings, exporter, cost].map((m) => ({
  uid: m.UID,
  file: `${m.UID}.json`,
  build: m.build,
}));

/** Every dashboard's file name and file text, in a fixed order. */
export function renderAll(): { file: string; text: string }[] {
  return DASHBOARDS.map((d) => ({ file: d.file, text: render(d.build()) }));
}

export { render };
