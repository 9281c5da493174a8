/**
 * The exporter's log as an SRE reads it: a metrics API that fails (500, then a malformed body) is a warning once
 * per change of cause, not one per window and not only at debug; its recovery is a line; and no JSON line names
 * a key twice (the account's child logger carries `account`, so no line adds it again).
 */
import { describe, expect, it } from 'vitest';
import { captureLog } from '../helpers/log-capture.js';
import { perTest } from '../helpers/per-test.js';
import { waitFor } from '../helpers/stack.js';

const started = perTest();

/** Keys that occur twice in one JSON object of `text`, at any depth (JSON.parse keeps only the last). */
function repeatedKeys(text: string): string[] {
  const repeated: string[] = [];
  const stack: Array<{ keys: Set<string>; object: boolean }> = [];
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    if (c === '{' || c === '[') {
      stack.push({ keys: new Set(), object: c === '{' });
      i++;
    } else if (c === '}' || c === ']') {
      stack.pop();
      i++;
    } else if (c === '"') {
      let j = i + 1;
      while (j < text.length && text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
      const str = JSON.parse(text.slice(i, j + 1)) as string;
      let k = j + 1;
      while (text[k] === ' ') k++;
      const top = stack.at(-1);
      if (text[k] === ':' && top?.object) {
        if (top.keys.has(str)) repeated.push(str);
        top.keys.add(str);
      }
      i = j + 1;
    } else i++;
  }
  return repeated;
}

const failedLines = (lines: string[]) =>
  lines
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((l) => l.msg === 'metrics request failed; retrying with backoff');

describe('log lines', () => {
  it('the duplicate-key check finds a repeated key and passes a clean line', () => {
    expect(repeatedKeys('{"level":40,"account":"acme","account":"acme","msg":"x"}')).toEqual(['account']);
    expect(repeatedKeys('{"a":{"b":1},"c":[{"b":2},{"b":3}],"s":"\\"b\\":"}')).toEqual([]);
  });

  it('a failing metrics API warns once per cause, says when it answers again, and no line repeats a key', async () => {
    const s = await started.simulator({ seed: 7, slowMs: 300 });
    s.setFaults({ '500': 1 });
    const { log, lines } = captureLog();
    const st = await started.stack({
      simulator: s,
      config: {
        metrics: { lookback: '2h', window: '5m', delay: '1m' },
        accounts: [{ name: 'demo', dvr_streams: ['live/main'], recordings: true }],
      },
      exporter: { log },
    });
    const failures = (fault: string) =>
      s.requestLog.filter((e) => e.api === 'metrics' && e.fault === fault).length;
    // Many windows fail (catch-up has several in flight, each retried): still one warning per cause.
    await waitFor(() => failures('500') >= 8, 15_000, 'eight 500 answers');
    s.setFaults({ malformed: 1 });
    await waitFor(() => failures('malformed') >= 8, 15_000, 'eight malformed answers');
    s.setFaults({});
    await waitFor(
      async () => (await st.scrape()).value('cdn_up', { api: 'metrics', account: 'demo' }) === 1,
      15_000,
      'the metrics API up again',
    );

    const failed = failedLines(lines);
    expect(failed.map((l) => [l.level, l.account, l.cause])).toEqual([
      [40, 'demo', '500 server'],
      [40, 'demo', '200 malformed'],
    ]);
    expect(String(failed[0]!.error)).toMatch(/^500/);
    const parsed = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(parsed.filter((l) => l.msg === 'metrics API answers again')).toEqual([
      expect.objectContaining({ level: 30, account: 'demo', after: '200 malformed' }),
    ]);
    // The DVR and recordings rounds failed too (the 500s hit every API): their warnings name the account once.
    expect(parsed.filter((l) => l.level === 40).map((l) => l.msg)).toEqual(
      expect.arrayContaining(['DVR poll failed', 'recordings poll failed']),
    );
    for (const line of lines) expect(repeatedKeys(line), line).toEqual([]);
    const polls = parsed.filter((x) => /^(metrics|DVR|recordings) /.test(String(x.msg)));
    expect(polls.length).toBeGreaterThanOrEqual(4);
    for (const l of polls) expect(l.account, JSON.stringify(l)).toBe('demo');
  }, 60_000);
});
