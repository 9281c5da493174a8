/**
 * escapeHtml (src/server/html.ts), the one escaping of every text the exporter's pages show: whatever a text holds
 * (an account name, an API's error, a search), once escaped it is shown as that text and nothing else. It can
 * open no tag, end no attribute value (quoted with " or '), and start no character reference of its own; a
 * browser decoding it gets the text back exactly. test/server/units.test.ts checks the five specials one by one.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { escapeHtml } from '../../src/server/html.js';

/** What a browser gives back from text or a quoted attribute value: numeric and the named references. */
function decode(html: string): string {
  const named: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };
  return html.replace(/&(?:#(\d+)|#x([0-9a-f]+)|([a-z]+));/gi, (whole, dec, hex, name) => {
    if (dec !== undefined) return String.fromCodePoint(Number(dec));
    if (hex !== undefined) return String.fromCodePoint(Number.parseInt(hex, 16));
    return named[name as string] ?? whole;
  });
}

describe('escapeHtml', () => {
  it('gives back any text exactly once a browser decodes it, with no markup character left (property)', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 200 }), (s) => {
        const out = escapeHtml(s);
        expect(out).not.toMatch(/[<>"']/);
        // Every & left starts a reference escapeHtml made: a text cannot start one of its own.
        expect(out.replace(/&#(38|60|62|34|39);/g, '')).not.toContain('&');
        expect(decode(out)).toBe(s);
      }),
    );
  });

  it('shows a text that looks escaped as it is written, not as what it would decode to', () => {
    // An account named `a&amp;b` is shown as `a&amp;b`: escaping happens once, on the raw text.
    expect(decode(escapeHtml('a&amp;b &#60;x&#62;'))).toBe('a&amp;b &#60;x&#62;');
  });

  it('keeps a value inside its attribute, whichever quote the page uses', () => {
    const hostile = `x" onmouseover="alert(1)' onfocus='alert(2)`;
    for (const quote of ['"', "'"]) {
      const tag = `<a title=${quote}${escapeHtml(hostile)}${quote}>`;
      // One attribute: the only quotes in the tag are the two the page wrote.
      expect(tag.split(quote)).toHaveLength(3);
      expect(decode(tag.split(quote)[1]!)).toBe(hostile);
    }
  });

  it('leaves text without the five specials unchanged, any script or emoji included', () => {
    for (const s of ['', 'acme-prod', 'Grüße', '東京', 'rocket 🚀', 'a;b#c=1 %20 `x`'])
      expect(escapeHtml(s)).toBe(s);
  });
});
