/**
 * Pages of rows sized by their text, not only by their count: lines may be 100 bytes or 1 MB (a
 * long prompt, a large answer), and a page of 1,000 large lines would hold a gigabyte at once.
 *
 * 64 KiB, well under V8's large-object size (128 KiB): a page's text, and the query that writes
 * it, are then short-lived young-generation garbage, swept at once. Larger pages go straight to
 * the old generation, which V8 lets grow for a while before it collects it: three 50 MB uploads
 * in a row grew the gateway's RSS by 52, 57 and 35 MB in 1 MiB pages (148 → 292 MB), by 36, 16
 * and 12 MB in 64 KiB pages (148 → 211 MB), no slower (1.6 to 2 s each).
 */
export const PAGE_CHARS = 64 * 1024;
export const PAGE_ROWS = { min: 10, max: 1000 } as const;

/** How many rows to read next for a page of about PAGE_CHARS, from the last page's rows and text. */
export function nextPageRows(rows: number, chars: number): number {
  if (rows === 0 || chars === 0) return PAGE_ROWS.min;
  return Math.max(PAGE_ROWS.min, Math.min(PAGE_ROWS.max, Math.floor(PAGE_CHARS / (chars / rows))));
}
