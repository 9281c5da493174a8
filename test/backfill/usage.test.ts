/**
 * `cdn-exporter backfill --help` (src/backfill/usage.ts) against what it describes: every flag it lists is one the
 * command line takes after `backfill`, with a value exactly when the usage shows one; the flags of docs/backfill.md's
 * table ("The command") are all there and it lists no backfill flag the table does not; the exit codes are those
 * the docs give; the program name is the one given.
 */
import { describe, expect, it } from 'vitest';
import { backfillUsage } from '../../src/backfill/usage.js';
import { parseCommandLine, UsageError } from '../../src/config/flags.js';
import { readDoc, section } from '../helpers/markdown.js';

/** The Flags section's entries: each flag and the placeholder of its value, if it takes one. */
function usageFlags(text: string): { flag: string; value?: string }[] {
  const flags = text.slice(text.indexOf('\nFlags:\n'), text.indexOf('\nFailures:'));
  return [...flags.matchAll(/^ {2}(--[a-z.-]+)(?: ([A-Za-z.,]+))?(?= {2,})/gm)].map((m) =>
    m[2] === undefined ? { flag: m[1]! } : { flag: m[1]!, value: m[2] },
  );
}

describe('backfillUsage', () => {
  const text = backfillUsage();
  const flags = usageFlags(text);

  it('names the program given, cdn-exporter by default', () => {
    expect(text.startsWith('Usage: cdn-exporter backfill --config FILE ')).toBe(true);
    expect(backfillUsage('/usr/bin/cdnx').startsWith('Usage: /usr/bin/cdnx backfill ')).toBe(true);
  });

  it('lists only flags the command line takes after backfill, each with a value exactly when it shows one', () => {
    expect(flags.length).toBeGreaterThanOrEqual(12);
    for (const { flag, value } of flags) {
      const sample = value === 'LEVEL' ? 'info' : value === 'FORMAT' ? 'json' : 'x';
      const argv = ['backfill', flag, ...(value === undefined ? [] : [sample])];
      expect(() => parseCommandLine(argv), argv.join(' ')).not.toThrow();
      // A boolean flag shown with a value, or a valued one without: the parser refuses.
      if (value === undefined) expect(() => parseCommandLine([...argv, 'x'])).toThrow(UsageError);
      else expect(() => parseCommandLine(['backfill', flag])).toThrow(UsageError);
    }
    expect(() => parseCommandLine(['backfill', '--force'])).toThrow(UsageError);
    expect(parseCommandLine(['backfill', '--help']).help).toBe(true);
  });

  it('lists the flags of the docs table, and no backfill flag the table lacks', () => {
    const table = section(readDoc('docs/backfill.md'), '## The command').filter((l) => l.startsWith('| `--'));
    const documented = new Set(
      table.flatMap((row) => [...row.split('|')[1]!.matchAll(/`(--[a-z-]+)/g)].map((m) => m[1]!)),
    );
    expect(documented.size).toBeGreaterThanOrEqual(10);
    const listed = new Set(flags.map((f) => f.flag));
    for (const flag of documented) expect(listed, flag).toContain(flag);
    // The log flags are the exporter's own (docs/configuration.md), not the backfill's.
    for (const flag of listed) if (!flag.startsWith('--log.')) expect(documented, flag).toContain(flag);
  });

  it('gives the exit codes the docs give', () => {
    expect(text).toContain(
      'Exit codes: 0 done, 1 stopped by a failure, 2 bad flags or configuration, 130/143 interrupted by SIGINT/SIGTERM',
    );
    const doc = readDoc('docs/backfill.md').replace(/\n/g, ' ');
    expect(doc).toContain(
      'Exit codes: 0 done, 1 stopped by a failure (the progress is kept), 2 bad flags or configuration, 130 and 143 interrupted by SIGINT and SIGTERM',
    );
  });
});
