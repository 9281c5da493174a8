/**
 * The words for the folded resources, `resource="__other__"` (src/server/other-resources.ts): the pages never
 * show `__other__` as a resource but "other resources (N)", N grouped with commas as the page writes counts; the
 * dashboards (grafana/dashboards-src/common.ts) rename the series to the same OTHER_TEXT; docs/metrics.md and
 * docs/configuration.md tell users those words.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { OTHER_TEXT, otherResources } from '../../src/server/other-resources.js';
import { OTHER } from '../../src/traffic/fold.js';

describe('other resources', () => {
  it('reads "other resources (N)", N with thousands separators whatever the locale', () => {
    expect(otherResources(14_900)).toBe('other resources (14,900)');
    expect(otherResources(1)).toBe('other resources (1)');
    expect(otherResources(1_234_567)).toBe('other resources (1,234,567)');
  });

  it('starts with OTHER_TEXT, and is never the series label value itself', () => {
    expect(OTHER_TEXT).toBe('other resources');
    expect(otherResources(3).startsWith(`${OTHER_TEXT} (`)).toBe(true);
    expect(otherResources(3)).not.toContain(OTHER);
  });

  it('are the words the user docs give for the folded resources', () => {
    for (const doc of ['docs/metrics.md', 'docs/configuration.md'])
      expect(readFileSync(doc, 'utf8'), doc).toContain(`_${OTHER_TEXT} (N)_`);
  });
});
