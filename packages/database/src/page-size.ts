import type { Database } from './connection.ts';

/**
 * Pages of rows sized by their bytes, not by their count: lines may be 100 bytes or 50 MB (a long
 * prompt, a large answer). Pages of at least 10 rows held 10 lines of 10 MB at once for each
 * download: 8 slow downloads of one file took the gateway from 295 MB to 4.2 GB.
 *
 * 64 KiB, well under V8's large-object size (128 KiB): a page's text, and the query that writes
 * it, are then short-lived young-generation garbage, swept at once. Larger pages go straight to
 * the old generation, which V8 lets grow for a while before it collects it: three 50 MB uploads
 * in a row grew the gateway's RSS by 52, 57 and 35 MB in 1 MiB pages (148 → 292 MB), by 36, 16
 * and 12 MB in 64 KiB pages (148 → 211 MB), no slower (1.6 to 2 s each).
 */
export const PAGE_CHARS = 64 * 1024;
/** A page holds the rows that begin before this many bytes of it: at least one, whatever its size. */
export const PAGE_BYTES = PAGE_CHARS;
/** Most rows of a page, however small they are. */
export const PAGE_ROWS = 1000;

/**
 * How many rows to size for the next page, from how many the last one held: twice as many, so
 * small rows soon fill a page, while large ones are not sized 1,000 at a time for a page of 6
 * (a 50 MB file of 10 kB lines read 1,000 rows' sizes for each of its 800 pages).
 */
export const nextCandidates = (lastPageRows: number) => Math.min(PAGE_ROWS, Math.max(16, 2 * lastPageRows));
/** A value larger than this is read in parts of this many bytes, never whole; a smaller one comes whole in its page. */
export const PART_BYTES = 256 * 1024;

/**
 * The text value `sql` selects (as `value`, from `params`), PART_BYTES of its UTF-8 bytes at a
 * time (a part may end inside a character: the bytes go to the client as they are). PostgreSQL
 * reads the value once, for a cursor on a connection of `db` held until the last part or an
 * early end; its substr would read it again, from its start, for every part (a 10 MB line in
 * 40 parts took 5 to 6.5 s, one query for the whole 1 s). Ends early when its row is gone.
 */
export async function* textInParts(db: Pick<Database, 'connect'>, sql: string, params: unknown[]): AsyncGenerator<Buffer> {
  const client = await db.connect();
  let broken: Error | undefined;
  let open = true;
  try {
    await client.query('BEGIN READ ONLY');
    // OFFSET 0 keeps the value a subquery's, converted once, not once for each part.
    await client.query(
      `DECLARE parts NO SCROLL CURSOR FOR
       SELECT substring(v.bytes FROM g FOR ${PART_BYTES}) AS part
       FROM (SELECT convert_to(value, 'UTF8') AS bytes FROM (${sql}) s OFFSET 0) v, generate_series(1, octet_length(v.bytes), ${PART_BYTES}) g`, params);
    for (;;) {
      const { rows } = await client.query<{ part: Buffer }>('FETCH 1 FROM parts');
      if (rows.length === 0) break;
      yield rows[0]!.part;
    }
    await client.query('COMMIT');
    open = false;
  } catch (error) {
    broken = error as Error;
    throw error;
  } finally {
    // Ended early (its client left): the transaction is rolled back before the connection goes back.
    if (open && !broken) await client.query('ROLLBACK').catch((error: Error) => (broken = error));
    client.release(broken);
  }
}
