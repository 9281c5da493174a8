/** A small reader of Prometheus text exposition, for asserting on what /metrics serves. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

/** A label value as the text exposition writes it: backslash, double quote and line feed escaped. */
export function escapeLabel(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
}

function unescapeLabel(v: string): string {
  return v.replace(/\\(["\\n])/g, (_, c: string) => (c === 'n' ? '\n' : c));
}

export function parseExposition(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = LINE.exec(line);
    if (!m) throw new Error(`unparsable exposition line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(LABEL)) labels[l[1]!] = unescapeLabel(l[2]!);
    out.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return out;
}

export class Scrape {
  constructor(readonly samples: Sample[]) {}

  static of(text: string): Scrape {
    return new Scrape(parseExposition(text));
  }

  /** GET `${base}/metrics`, read; fails on an answer other than 200 or none within `timeoutMs`. */
  static async from(base: string, timeoutMs = 30_000): Promise<Scrape> {
    const res = await fetch(`${base}/metrics`, { signal: AbortSignal.timeout(timeoutMs) });
    const text = await res.text();
    if (res.status !== 200) throw new Error(`${base}/metrics answered ${res.status}: ${text.slice(0, 200)}`);
    return Scrape.of(text);
  }

  all(name: string, match: Record<string, string> = {}): Sample[] {
    return this.samples.filter(
      (s) => s.name === name && Object.entries(match).every(([k, v]) => s.labels[k] === v),
    );
  }

  /** The value of the one sample matching; undefined when there is none; throws when several match. */
  value(name: string, match: Record<string, string> = {}): number | undefined {
    const found = this.all(name, match);
    if (found.length > 1)
      throw new Error(`${found.length} samples of ${name} match ${JSON.stringify(match)}`);
    return found[0]?.value;
  }
}
