/**
 * The memory and render baseline of the process benchmark, in a child process of its own: prom-client holding
 * the same counter and gauge series as the exporter's /metrics (read from the exposition file given as argv[2]),
 * then rendering them and gzipping the text (zlib's default level, as a server would). Prints one JSON line:
 * `{ series, steadyRssMb, peakRssMb, renderMs, gzipMs, gzipBytes }`. RSS is read from /proc like the exporter's.
 */
import { readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { Counter, Gauge, Registry } from 'prom-client';
import { fullGc, median } from './measure.js';

function procStatusMb(field: 'VmRSS' | 'VmHWM'): number {
  const m = new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync('/proc/self/status', 'utf8'));
  return m ? Number(m[1]) / 1024 : Number.NaN;
}

function parseLabels(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  const re = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    out[m[1]!] = m[2]!.replace(/\\(["\\n])/g, (_x, c: string) => (c === 'n' ? '\n' : c));
  }
  return out;
}

const registry = new Registry();
const types = new Map<string, string>();
const help = new Map<string, string>();
type Metric = Counter<string> | Gauge<string>;
const metrics = new Map<string, Metric>();
let series = 0;
{
  const text = readFileSync(process.argv[2]!, 'utf8');
  let from = 0;
  while (from < text.length) {
    let to = text.indexOf('\n', from);
    if (to < 0) to = text.length;
    const line = text.slice(from, to);
    from = to + 1;
    if (line.startsWith('# TYPE ')) {
      const [, , name, type] = line.split(' ');
      types.set(name!, type!);
      continue;
    }
    if (line.startsWith('# HELP ')) {
      const rest = line.slice(7);
      const sp = rest.indexOf(' ');
      help.set(rest.slice(0, sp), rest.slice(sp + 1));
      continue;
    }
    if (line === '' || line.startsWith('#')) continue;
    const brace = line.indexOf('{');
    const space = line.lastIndexOf(' ');
    const name = brace >= 0 ? line.slice(0, brace) : line.slice(0, space);
    const type = types.get(name);
    if (type !== 'counter' && type !== 'gauge') continue;
    const labels = brace >= 0 ? parseLabels(line.slice(brace, space)) : {};
    let metric = metrics.get(name);
    if (!metric) {
      const spec = {
        name,
        help: help.get(name) ?? name,
        labelNames: Object.keys(labels),
        registers: [registry],
      };
      metric = type === 'counter' ? new Counter(spec) : new Gauge(spec);
      metrics.set(name, metric);
    }
    const value = Number(line.slice(space + 1));
    if (metric instanceof Counter) metric.inc(labels, value);
    else metric.set(labels, value);
    series++;
  }
}
fullGc();
const steadyRssMb = procStatusMb('VmRSS');
const renders: number[] = [];
const gzips: number[] = [];
let gzipBytes = 0;
for (let i = 0; i < 3; i++) {
  fullGc();
  const t = performance.now();
  const text = await registry.metrics();
  renders.push(performance.now() - t);
  const g = performance.now();
  gzipBytes = gzipSync(text).length;
  gzips.push(performance.now() - g);
}
process.stdout.write(
  `${JSON.stringify({
    series,
    steadyRssMb,
    peakRssMb: procStatusMb('VmHWM'),
    renderMs: median(renders),
    gzipMs: median(gzips),
    gzipBytes,
  })}\n`,
);
