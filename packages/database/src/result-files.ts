import type { Database } from './connection.ts';
import { lineResultId, newFileId, unixNow } from './ids.ts';
import { nextCandidates, PAGE_BYTES, PART_BYTES, textInParts } from './page-size.ts';

/** Which of a batch's lines a result file holds: its successes, or its failures. */
export type ResultKind = 'output' | 'error';

const WHERE: Record<ResultKind, string> = {
  output: 'state = 2 AND status_code BETWEEN 200 AND 299',
  error: 'state = 2 AND (status_code IS NULL OR status_code NOT BETWEEN 200 AND 299)',
};

/**
 * What an ended line keeps besides its copy of the input: its response and its error, counted
 * into its batch's `kept_bytes` (its user's FILE_USER_MAX_BYTES) as they are written, and taken
 * off only when they are really deleted. `l` is the batch_lines row.
 */
export const RESULT_BYTES_SQL = `coalesce(octet_length(l.response), 0) + coalesce(octet_length(l.error::text), 0)`;

interface ResultRow {
  line_no: number;
  custom_id: string;
  status_code: number | null;
  request_id: string | null;
  response: string | null;
  error: unknown;
}

/**
 * One line of an output or error file in OpenAI's format, around its answer's body: the line is
 * `head`, the body, `tail`. The body is the JSON text the worker wrote, spliced in as it is (a
 * large reply is never parsed and written again), and none when the line has no answer.
 */
function resultLine(batchId: string, row: ResultRow): { head: string; hasBody: boolean; tail: string } {
  const hasBody = row.status_code !== null;
  const head = `{"id":${JSON.stringify(lineResultId(batchId, row.line_no))},"custom_id":${JSON.stringify(row.custom_id)},"response":`
    + (hasBody ? `{"status_code":${row.status_code},"request_id":${JSON.stringify(row.request_id ?? '')},"body":` : 'null');
  const error = row.status_code !== null && row.status_code >= 200 && row.status_code < 300 ? 'null' : JSON.stringify(row.error ?? null);
  return { head, hasBody, tail: `${hasBody ? '}' : ''},"error":${error}}\n` };
}

/**
 * Deletes the results a batch's output or error file shows (its file row is being deleted in the
 * same transaction), and takes their bytes off what the batch keeps: a file's bytes are given
 * back only with the rows that hold them. The lines stay, ended, with their status.
 */
export async function forgetResults(client: Pick<Database, 'query'>, batchId: string, kind: ResultKind): Promise<void> {
  await client.query(
    `WITH gone AS (SELECT line_no, ${RESULT_BYTES_SQL} AS bytes FROM batch_lines l WHERE batch_id = $1 AND ${WHERE[kind]} FOR UPDATE),
     cleared AS (UPDATE batch_lines l SET response = NULL, error = NULL FROM gone WHERE l.batch_id = $1 AND l.line_no = gone.line_no RETURNING gone.bytes)
     UPDATE batches SET kept_bytes = kept_bytes - (SELECT coalesce(sum(bytes), 0) FROM cleared) WHERE id = $1`, [batchId]);
}

/**
 * The next result rows after `$2`, those that begin within PAGE_BYTES (`$4`) of the page (at
 * least one), as `resultFileContent` reads them: an answer larger than `$5` bytes (PART_BYTES)
 * comes without its text (null, `large`), which PostgreSQL then never reads. One scan, no join
 * back to the rows, for the reason `NEXT_LINES` (file-lines.ts) gives.
 */
export const nextResults = (kind: ResultKind) => `
  SELECT line_no, custom_id, status_code, request_id, error,
         CASE WHEN octet_length(response) <= $5 THEN response END AS response, octet_length(response) > $5 AS large
  FROM (
    SELECT *, sum(bytes) OVER (ORDER BY line_no) - bytes AS before FROM (
      SELECT line_no, custom_id, status_code, request_id, error, response,
             coalesce(octet_length(response), 0) + coalesce(octet_length(custom_id), 0) AS bytes
      FROM batch_lines WHERE batch_id = $1 AND line_no > $2 AND ${WHERE[kind]} ORDER BY line_no LIMIT $3) next) placed
  WHERE before < $4 ORDER BY line_no`;

const RESPONSE = `SELECT response AS value FROM batch_lines WHERE batch_id = $1 AND line_no = $2`;

/**
 * A batch's output or error file, in input order, in pages of about PAGE_BYTES: an answer larger
 * than a page comes in parts (on a connection of `partsDb`), never whole.
 */
export async function* resultFileContent(db: Database, batchId: string, kind: ResultKind, partsDb: Database = db): AsyncGenerator<string | Buffer> {
  for (let after = 0, candidates = nextCandidates(0); ;) {
    const { rows } = await db.query<ResultRow & { large: boolean | null }>(nextResults(kind), [batchId, after, candidates, PAGE_BYTES, PART_BYTES]);
    if (rows.length === 0) return;
    let page = '';
    for (const row of rows) {
      const { head, hasBody, tail } = resultLine(batchId, row);
      if (!hasBody || !row.large) {
        page += head + (hasBody ? (row.response ?? 'null') : '') + tail;
        continue;
      }
      yield page + head;
      yield* textInParts(partsDb, RESPONSE, [batchId, row.line_no]);
      page = tail;
    }
    yield page;
    after = rows.at(-1)!.line_no;
    candidates = nextCandidates(rows.length);
  }
}

/**
 * Makes a batch's output and error files (rows of `files` that read the batch's lines): null for
 * a kind with no line. Their size is counted from the very text `/content` serves.
 */
export async function createBatchResultFiles(db: Database, batchId: string, userId: number): Promise<{ outputFileId: string | null; errorFileId: string | null }> {
  const made: Record<ResultKind, string | null> = { output: null, error: null };
  for (const kind of ['output', 'error'] as const) {
    let bytes = 0;
    let lines = 0;
    for await (const page of resultFileContent(db, batchId, kind)) {
      bytes += Buffer.byteLength(page);
      const text = typeof page === 'string' ? page : page.toString('latin1');
      for (let at = text.indexOf('\n'); at !== -1; at = text.indexOf('\n', at + 1)) lines++;
    }
    if (lines === 0) continue;
    // Made once: a batch worker that ends the batch again after a takeover finds them.
    const { rows } = await db.query<{ id: string }>(
      `INSERT INTO files (id, user_id, purpose, filename, bytes, line_count, created_at, kind, batch_id)
       SELECT $1, $2, 'batch_output', $3, $4, $5, $6, $7, $8
       WHERE NOT EXISTS (SELECT 1 FROM files WHERE batch_id = $8 AND kind = $7)
       RETURNING id`,
      [newFileId(), userId, `${batchId}_${kind}.jsonl`, bytes, lines, unixNow(), kind, batchId]);
    made[kind] = rows[0]?.id ?? (await db.query<{ id: string }>(`SELECT id FROM files WHERE batch_id = $1 AND kind = $2`, [batchId, kind])).rows[0]!.id;
  }
  return { outputFileId: made.output, errorFileId: made.error };
}
