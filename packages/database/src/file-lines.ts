import { INT4_MAX } from '@gateway/contracts';
import type { Database } from './connection.ts';
import { nextCandidates, PAGE_BYTES, PART_BYTES, textInParts } from './page-size.ts';

/**
 * The next rows of an upload's lines after `$2`, those that begin within PAGE_BYTES (`$4`) of the
 * page (at least one): their sizes are read from the values' headers, and a line larger than
 * `$5` bytes (PART_BYTES, for a download) comes without its content (null), which PostgreSQL
 * then never reads (a value stored apart is carried as a pointer until it is sent).
 *
 * One scan of the file's rows, no join back to them: joined, a planner whose statistics did not
 * know the file yet (a large upload, before autovacuum analysed it) looked each page's lines up by
 * the file alone, every line of the file for each line of the page (docs/benchmarks.md).
 */
export const NEXT_LINES = `
  SELECT line_no, CASE WHEN bytes <= $5 THEN content END AS content FROM (
    SELECT line_no, content, bytes, sum(bytes) OVER (ORDER BY line_no) - bytes AS before FROM (
      SELECT line_no, content, octet_length(content) AS bytes FROM file_lines
      WHERE file_id = $1 AND line_no > $2 ORDER BY line_no LIMIT $3) next) placed
  WHERE before < $4 ORDER BY line_no`;

const LINE = `SELECT content AS value FROM file_lines WHERE file_id = $1 AND line_no = $2`;

/**
 * An upload's content, as it was sent (one line a line), in pages of about PAGE_BYTES: a line
 * larger than a page comes in parts (on a connection of `partsDb`, held while they are read), so
 * a download holds a page, never a whole large line, and reads the next only when its client
 * has taken the last.
 */
export async function* uploadContent(db: Database, fileId: string, partsDb: Database = db): AsyncGenerator<string | Buffer> {
  for (let after = 0, candidates = nextCandidates(0); ;) {
    const { rows } = await db.query<{ line_no: number; content: string | null }>(NEXT_LINES, [fileId, after, candidates, PAGE_BYTES, PART_BYTES]);
    if (rows.length === 0) return;
    let page = '';
    for (const row of rows) {
      if (row.content !== null) {
        page += row.content + '\n';
        continue;
      }
      if (page) yield page;
      page = '\n';
      yield* textInParts(partsDb, LINE, [fileId, row.line_no]);
    }
    yield page;
    after = rows.at(-1)!.line_no;
    candidates = nextCandidates(rows.length);
  }
}

/**
 * An upload's lines in order, whole (each is validated as one JSON value), in pages of the lines
 * that begin within PAGE_BYTES of the page: a batch worker holds a page of small lines, or one
 * large line, at a time. Pages of 1,000 lines took it from 123 MB to 948 MB on a file of 20 lines
 * of 10 MB.
 */
export async function* uploadLinePages(db: Database, fileId: string): AsyncGenerator<{ line: number; content: string }[]> {
  for (let after = 0, candidates = nextCandidates(0); ;) {
    const { rows } = await db.query<{ line_no: number; content: string }>(NEXT_LINES, [fileId, after, candidates, PAGE_BYTES, INT4_MAX]);
    if (rows.length === 0) return;
    yield rows.map((r) => ({ line: r.line_no, content: r.content }));
    after = rows.at(-1)!.line_no;
    candidates = nextCandidates(rows.length);
  }
}
