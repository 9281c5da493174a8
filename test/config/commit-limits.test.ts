/**
 * The commit's volume and bandwidth at their edges (issue 33, row 5): `10PB` was refused as "must be a volume above
 * 0 like 50TB" while `9PB` passed (the unnamed cap was 2^53 bytes), and `1.5TB` got the same message while
 * `1.5Gbps` passed. Now a fraction is read (rounded half up to whole bytes or bits), and the cap is
 * Number.MAX_SAFE_INTEGER, named in the message, with the values on each side of it.
 */

import { describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { ConfigError, checkConfigReport, formatIssue, loadConfig } from '../../src/config/index.js';

const loadText = (text: string) => loadConfig({ file: 'cdn.yaml', env: {}, readFile: () => text });
const load = (doc: unknown) => loadText(stringify(doc));

const withCommit = (commit: unknown) => ({
  api: { base_url: 'https://api.cdn.example', token: 't' },
  accounts: [{ name: 'acme', commit }],
});

function problems(load: () => unknown): string {
  try {
    load();
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return (e as ConfigError).issues.map(formatIssue).join('\n');
  }
  throw new Error('configuration was accepted');
}

const MAX = Number.MAX_SAFE_INTEGER;

describe('commit.monthly_transfer', () => {
  it.each([
    ['1.5TB', 1.5e12],
    ['2.25GB', 2.25e9],
    ['0.5PiB', 0.5 * 1024 ** 5],
    ['9PB', 9e15],
    ['1.5B', 2],
    ['1.0000000000004TB', 1e12],
    ['1.0000000000005TB', 1e12 + 1],
    // The cap itself, written three ways.
    ['9007199254740991', MAX],
    ['9007199254740991B', MAX],
    ['9.007199254740991PB', MAX],
  ])('%s is %d bytes', (text, bytes) => {
    expect(load(withCommit({ monthly_transfer: text })).accounts[0]!.commit).toEqual({
      monthlyTransferBytes: bytes,
    });
  });

  // 8PiB is 2^53, one past the cap.
  it.each(['10PB', '9007199254740992B', '9.007199254740992PB', '8PiB', '1000000PB'])(
    '%s is refused, the cap named',
    (text) => {
      expect(problems(() => load(withCommit({ monthly_transfer: text })))).toBe(
        'accounts[0].commit.monthly_transfer: must be at most 9007199254740991 bytes (9.007199254740991PB, ' +
          'Number.MAX_SAFE_INTEGER: the largest whole number the exporter holds exactly), ' +
          `got ${JSON.stringify(text)}`,
      );
    },
  );

  it('a YAML number past the cap is refused the same way', () => {
    const doc = `api: {base_url: https://api.cdn.example, token: t}\naccounts:\n  - name: acme\n    commit: {monthly_transfer: 9007199254740992}\n`;
    expect(problems(() => loadText(doc))).toContain(
      'accounts[0].commit.monthly_transfer: must be at most 9007199254740991 bytes',
    );
  });

  it.each(['0.4B', '0TB', '0.0TB', '1.5 terabytes', '1,5TB', '.5TB', '1.TB'])(
    '%s is not a volume above 0',
    (text) => {
      expect(problems(() => load(withCommit({ monthly_transfer: text })))).toContain(
        'accounts[0].commit.monthly_transfer: must be a volume above 0 like 50TB, 800GB, 1.5TB or 2PB',
      );
    },
  );
});

describe('commit.bandwidth_p95', () => {
  it.each([
    ['1.5Gbps', 1.5e9],
    ['0.3Gbps', 3e8],
    ['0.1Tbps', 1e11],
    ['9007.199254740991Tbps', MAX],
    ['9007199254740991bps', MAX],
  ])('%s is %d bit/s', (text, bits) => {
    expect(load(withCommit({ bandwidth_p95: text })).accounts[0]!.commit).toEqual({
      bandwidthP95BitsPerSecond: bits,
    });
  });

  it.each(['10000Tbps', '9007.199254740992Tbps', '9007199254740992bps'])(
    '%s is refused, the cap named',
    (text) => {
      expect(problems(() => load(withCommit({ bandwidth_p95: text })))).toBe(
        'accounts[0].commit.bandwidth_p95: must be at most 9007199254740991 bits per second ' +
          '(9007.199254740991Tbps, Number.MAX_SAFE_INTEGER: the largest whole number the exporter holds exactly), ' +
          `got ${JSON.stringify(text)}`,
      );
    },
  );
});

describe('check-config', () => {
  it('prints a fractional commit back in the contract units, and it loads back the same', () => {
    const config = load(withCommit({ monthly_transfer: '1.5TB', bandwidth_p95: '2.5Gbps' }));
    const printed = parse(checkConfigReport(config)) as { accounts: Array<{ commit?: unknown }> };
    expect(printed.accounts[0]!.commit).toEqual({ monthly_transfer: '1500GB', bandwidth_p95: '2500Mbps' });
    const again = load({ ...printed, api: { base_url: 'https://api.cdn.example', token: 't' } });
    expect(again.accounts[0]!.commit).toEqual(config.accounts[0]!.commit);
  });

  it('prints the cap back as a value that loads', () => {
    const config = load(withCommit({ monthly_transfer: '9007199254740991B' }));
    const printed = parse(checkConfigReport(config)) as { accounts: Array<{ commit?: unknown }> };
    const again = load({ ...printed, api: { base_url: 'https://api.cdn.example', token: 't' } });
    expect(again.accounts[0]!.commit).toEqual({ monthlyTransferBytes: MAX });
  });
});
