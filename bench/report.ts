/**
 * Shared shape and printing of benchmark results. Every row compares a value with a baseline measured in the same
 * run; `ratio` is baseline / value, so above 1 means better than the baseline (all figures are lower-is-better).
 */
export interface BenchRow {
  name: string;
  unit: string;
  value: number;
  baseline?: number;
  /** What the row must reach to pass, as a minimum ratio (baseline / value) or a maximum value. */
  target?: { minRatio?: number; maxValue?: number };
}

function fmt(n: number): string {
  if (!Number.isFinite(n)) return String(n);
  if (n === 0) return '0';
  const a = Math.abs(n);
  if (a >= 100) return n.toFixed(0);
  if (a >= 1) return n.toFixed(2);
  return n.toPrecision(3);
}

export function ratioOf(row: BenchRow): number | undefined {
  return row.baseline === undefined ? undefined : row.baseline / row.value;
}

export function verdict(row: BenchRow): 'ok' | 'MISS' | '' {
  const t = row.target;
  if (!t) return '';
  const r = ratioOf(row);
  if (t.minRatio !== undefined && (r === undefined || r < t.minRatio)) return 'MISS';
  if (t.maxValue !== undefined && row.value > t.maxValue) return 'MISS';
  return 'ok';
}

export function formatTable(rows: readonly BenchRow[]): string {
  const header = ['name', 'value', 'baseline', 'ratio', 'target'];
  const lines = rows.map((r) => {
    const ratio = ratioOf(r);
    const t = r.target;
    const target = t
      ? `${t.minRatio !== undefined ? `>=${fmt(t.minRatio)}x` : `<=${fmt(t.maxValue ?? 0)} ${r.unit}`} ${verdict(r)}`
      : '';
    return [
      r.name,
      `${fmt(r.value)} ${r.unit}`,
      r.baseline === undefined ? '-' : `${fmt(r.baseline)} ${r.unit}`,
      ratio === undefined ? '-' : `${fmt(ratio)}x`,
      target,
    ];
  });
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  const pad = (cells: string[]) =>
    cells
      .map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [pad(header), ...lines.map(pad)].join('\n');
}
