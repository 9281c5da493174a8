/**
 * The oldest Node.js the installed exporter runs on, and the check the entry point makes before it loads
 * anything else. No imports: this module must load on any Node, so an old one gets a sentence, not a stack trace.
 *
 * The floor is undici's (8.x declares `>=22.19.0` and fails at import on older Node, in `bind` of an API it
 * expects). package.json `engines` states the same (test/cli/node-floor.test.ts keeps the two, and undici's own
 * `engines`, in step).
 */
export const NODE_FLOOR = '22.19.0';

function parts(version: string): number[] {
  return version
    .replace(/^v/, '')
    .split('.')
    .slice(0, 3)
    .map((p) => Number.parseInt(p, 10) || 0);
}

/** True when `version` (`process.versions.node` or `v20.20.2`) is older than `floor`. */
export function olderThan(version: string, floor: string = NODE_FLOOR): boolean {
  const a = parts(version);
  const b = parts(floor);
  for (let i = 0; i < 3; i++) {
    if ((a[i] ?? 0) !== (b[i] ?? 0)) return (a[i] ?? 0) < (b[i] ?? 0);
  }
  return false;
}

/** The one line an older Node gets (exit code 2). */
export function floorMessage(version: string): string {
  return `cdn-exporter: needs Node.js ${NODE_FLOOR} or newer; this is Node.js ${version.replace(/^v?/, 'v')} (${process.execPath})`;
}
