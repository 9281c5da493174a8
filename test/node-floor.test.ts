/**
 * src/node-floor.ts: the version comparison the entry point makes before it loads anything, and the one line an
 * older Node gets. package.json's `engines`, undici's floor and the built command on an older Node are checked in
 * test/cli/node-floor.test.ts; this file holds the comparison's edges and the message's form.
 */
import { describe, expect, it } from 'vitest';
import { floorMessage, NODE_FLOOR, olderThan } from '../src/node-floor.js';

describe('olderThan', () => {
  it('compares against any floor given, part by part, numerically (10 is after 9)', () => {
    expect(olderThan('9.0.0', '10.0.0')).toBe(true);
    expect(olderThan('10.0.0', '9.0.0')).toBe(false);
    expect(olderThan('22.9.0', '22.10.0')).toBe(true);
    expect(olderThan('22.10.0', '22.9.0')).toBe(false);
    expect(olderThan('1.2.3', '1.2.3')).toBe(false);
    expect(olderThan('1.2.2', '1.2.3')).toBe(true);
  });

  it('reads process.versions.node and `node --version` alike, with or without the v', () => {
    for (const [a, b] of [
      ['v22.18.0', '22.18.0'],
      ['v24.1.0', '24.1.0'],
    ] as const)
      expect(olderThan(a)).toBe(olderThan(b));
    expect(olderThan('v22.18.0', 'v22.19.0')).toBe(true);
  });

  it('takes a missing part as 0 and a pre-release or build suffix as its release', () => {
    expect(olderThan('22')).toBe(true);
    expect(olderThan('23')).toBe(false);
    expect(olderThan('22.19')).toBe(false);
    expect(olderThan('22.19.0-nightly20250101abc')).toBe(false);
    expect(olderThan('22.18.0-pre')).toBe(true);
  });
});

describe('floorMessage', () => {
  it('is one line naming the floor, the Node it runs on with one v, and that Node binary', () => {
    for (const version of ['20.20.2', 'v20.20.2']) {
      const line = floorMessage(version);
      expect(line).toBe(
        `cdn-exporter: needs Node.js ${NODE_FLOOR} or newer; this is Node.js v20.20.2 (${process.execPath})`,
      );
      expect(line).not.toContain('\n');
    }
  });
});
