/** Reading the landing page's HTML as a user reads it: the text of a fragment, the rows of a table. */

/** The text of an HTML fragment: tags dropped, `<br>` a line break, numeric character references decoded. */
export function pageText(html: string): string {
  return html
    .replace(/<br>/g, '\n')
    .replace(/<[^>]*>/g, '')
    .replace(/&#(\d+);/g, (_, n: string) => String.fromCharCode(Number(n)))
    .trim();
}

/** The body rows of the table with this aria-label, as cell texts; [] when the page says there are none. */
export function tableRows(html: string, label: string): string[][] {
  const start = html.indexOf(`<table aria-label="${label}">`);
  if (start < 0) return [];
  const table = html.slice(start, html.indexOf('</table>', start));
  const body = table.slice(table.indexOf('<tbody>'));
  return [...body.matchAll(/<tr(?:\s[^>]*)?>(.*?)<\/tr>/g)].map((m) =>
    [...m[1]!.matchAll(/<td[^>]*>(.*?)<\/td>/g)].map((c) => pageText(c[1]!)),
  );
}
