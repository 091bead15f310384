import { insufficientQuota, type FileObject } from '@gateway/contracts';
import { inTransaction, type Database } from './connection.ts';
import { newFileId, unixNow } from './ids.ts';
import { lockUser } from './user-lock.ts';
import { forgetResults, resultFileContent, type ResultKind } from './result-files.ts';
import { PAGE_CHARS } from './page-size.ts';
import { uploadContent } from './file-lines.ts';

interface FileRow {
  id: string;
  bytes: string;
  created_at: string;
  filename: string;
  purpose: string;
  kind: string;
  batch_id: string | null;
}

const fileObject = (row: FileRow): FileObject => ({
  id: row.id, object: 'file', bytes: Number(row.bytes), created_at: Number(row.created_at), filename: row.filename,
  purpose: row.purpose, status: 'processed', expires_at: null, status_details: null,
});

/** What one user may keep: bytes of uploads all together, and uploads. */
export interface UserFileCap {
  maxBytes: number;
  maxFiles: number;
}

/** A user's uploads: how many, and their bytes all together. */
export interface FileUsage {
  files: number;
  bytes: number;
}

/** Why an upload is refused for what its user keeps already; undefined while it is within `cap`. */
export function fileCapRefusal(usage: FileUsage, cap: UserFileCap) {
  if (usage.files > cap.maxFiles) {
    return insufficientQuota(`this user keeps ${cap.maxFiles} files, the most a user may keep (FILE_USER_MAX_FILES): delete files to upload more`);
  }
  if (usage.bytes > cap.maxBytes) {
    return insufficientQuota(`this user's files would hold ${usage.bytes} bytes, more than the ${cap.maxBytes} a user may keep (FILE_USER_MAX_BYTES): delete files to upload more`);
  }
  return undefined;
}

/** Most rows, and most text, written per INSERT while a file is uploaded. */
const INSERT_ROWS = 500;
const INSERT_CHARS = PAGE_CHARS;

/**
 * Files of the OpenAI Files API, in PostgreSQL: an upload's lines are rows of `file_lines`,
 * written as they arrive; a batch's output and error files are read from its `batch_lines`.
 */
export class FileStore {
  private readonly db: Database;
  private readonly partsDb: Database;

  /** `partsDb`: where a download holds a connection while it reads a line larger than a page (file-lines.ts). */
  constructor(db: Database, partsDb: Database = db) {
    this.db = db;
    this.partsDb = partsDb;
  }

  /**
   * Stores an upload, a page of lines at a time in one transaction, so a refused or broken
   * upload leaves nothing. `lines` throws to refuse it (a bad line, past a limit); `file` is its
   * size and purpose, known once its form was read (the gateway spools the lines first). With
   * `cap`, the user's uploads with this one are counted under a lock of the user's right before
   * the commit, so uploads at once cannot pass it together.
   */
  async upload(
    userId: number, filename: string, lines: AsyncIterable<{ line: number; content: string }>, file: { bytes: number; purpose: string }, cap?: UserFileCap,
    /** Run under the user's lock just before the commit (which `forgetUser` takes too): throws when the user may no longer keep the file. */
    owned?: () => Promise<void>,
  ): Promise<FileObject> {
    const id = newFileId();
    return inTransaction(this.db, async (client) => {
      await client.query(
        `INSERT INTO files (id, user_id, purpose, filename, bytes, line_count, created_at) VALUES ($1, $2, 'batch', $3, 0, 0, $4)`,
        [id, userId, filename.slice(0, 512), unixNow()]);
      let page: { line: number; content: string }[] = [];
      let chars = 0;
      let count = 0;
      const write = async () => {
        if (page.length === 0) return;
        // One parameter per value, not two arrays: each line goes to the wire as it is, where an
        // array would first be written out again as one escaped literal.
        const rows = page.map((_, i) => `($1, $${2 * i + 2}, $${2 * i + 3})`).join(', ');
        await client.query(`INSERT INTO file_lines (file_id, line_no, content) VALUES ${rows}`, [id, ...page.flatMap((l) => [l.line, l.content])]);
        page = [];
        chars = 0;
      };
      for await (const line of lines) {
        page.push(line);
        chars += line.content.length;
        count++;
        if (page.length >= INSERT_ROWS || chars >= INSERT_CHARS) await write();
      }
      await write();
      const { rows } = await client.query<FileRow>(
        `UPDATE files SET bytes = $2, line_count = $3, purpose = $4 WHERE id = $1 RETURNING *`, [id, file.bytes, count, file.purpose]);
      if (cap || owned) await lockUser(client, 'files', userId);
      if (cap) {
        const refusal = fileCapRefusal(await usageOf(client, userId), cap);
        if (refusal) throw refusal;
      }
      await owned?.();
      return fileObject(rows[0]!);
    });
  }

  /** What the user's uploads hold now. */
  usage(userId: number): Promise<FileUsage> {
    return usageOf(this.db, userId);
  }

  /** The file, if it exists and (when `userId` is given) belongs to that user. */
  async get(id: string, userId?: number): Promise<FileObject | undefined> {
    const row = await this.row(id, userId);
    return row && fileObject(row);
  }

  private async row(id: string, userId?: number): Promise<FileRow | undefined> {
    const { rows } = await this.db.query<FileRow>(
      `SELECT id, bytes, created_at, filename, purpose, kind, batch_id FROM files WHERE id = $1 AND ($2::integer IS NULL OR user_id = $2)`, [id, userId ?? null]);
    return rows[0];
  }

  /** A page of a user's files (OpenAI's list: newest first unless `order` is asc, after a cursor). */
  async list(userId: number, options: { purpose?: string; after?: string; limit: number; order: 'asc' | 'desc' }): Promise<{ data: FileObject[]; hasMore: boolean }> {
    const cmp = options.order === 'asc' ? '>' : '<';
    const { rows } = await this.db.query<FileRow>(
      `SELECT id, bytes, created_at, filename, purpose, kind, batch_id FROM files f
       WHERE f.user_id = $1 AND ($2::text IS NULL OR f.purpose = $2)
         AND ($3::text IS NULL OR (f.created_at, f.id) ${cmp} (SELECT created_at, id FROM files WHERE id = $3 AND user_id = $1))
       ORDER BY f.created_at ${options.order}, f.id ${options.order} LIMIT $4`,
      [userId, options.purpose ?? null, options.after ?? null, options.limit + 1]);
    return { data: rows.slice(0, options.limit).map(fileObject), hasMore: rows.length > options.limit };
  }

  /**
   * Deletes a user's file (its lines with it; a batch's output or error file, the results it
   * shows); false when there was none.
   */
  async remove(id: string, userId: number): Promise<boolean> {
    return inTransaction(this.db, async (client) => {
      const { rows } = await client.query<{ kind: string; batch_id: string | null }>(
        `DELETE FROM files WHERE id = $1 AND user_id = $2 RETURNING kind, batch_id`, [id, userId]);
      const file = rows[0];
      if (!file) return false;
      if (file.batch_id && (file.kind === 'output' || file.kind === 'error')) await forgetResults(client, file.batch_id, file.kind);
      return true;
    });
  }

  /** A file's content, a page at a time: an upload's lines, or a batch's results. */
  async *content(id: string, userId: number): AsyncGenerator<string | Buffer> {
    const row = await this.row(id, userId);
    if (!row) return;
    if (row.batch_id && (row.kind === 'output' || row.kind === 'error')) {
      yield* resultFileContent(this.db, row.batch_id, row.kind as ResultKind, this.partsDb);
      return;
    }
    yield* uploadContent(this.db, id, this.partsDb);
  }
}

/**
 * What a batch keeps besides its input's copy and its metadata and errors: its row, and the rows
 * of its output and error files. Counted so that batches which copy nothing (an empty input
 * file, failed at once) still fill the user's bytes: 300 of them, with the largest metadata,
 * took 9 MB of PostgreSQL and counted for none.
 */
export const BATCH_ROW_BYTES = 1024;

/**
 * Its files as `client` sees them (the count and bytes of uploads), and what its batches keep
 * (`kept_bytes`, written with the batch, its errors and each line's result as it is recorded):
 * the bytes of the input files they copied, their metadata and errors, their results, and
 * BATCH_ROW_BYTES each. A batch's output and error files count for nothing of their own: they
 * show its results, counted already, and deleting them gives back the results' bytes with the
 * results (`forgetResults`). A batch keeps its input's lines
 * until it is dropped
 * (BATCH_RETENTION_DAYS after it ended), whether or not the file is kept. Counting a copy only
 * once its file was deleted let one file kept and run as twelve batches hold 5.7 times the cap,
 * and with 200 MB files there was no bound at all. Stored responses of the Responses API count
 * too, each its input items and response, until they expire (RESPONSE_RETENTION_DAYS).
 */
export async function usageOf(client: Pick<Database, 'query'>, userId: number): Promise<FileUsage> {
  const { rows } = await client.query<{ files: string; bytes: string; kept: string }>(
    `SELECT count(*) FILTER (WHERE kind = 'upload') AS files, coalesce(sum(bytes) FILTER (WHERE kind = 'upload'), 0) AS bytes,
            (SELECT coalesce(sum(kept_bytes), 0) FROM batches b WHERE b.user_id = $1)
              + (SELECT coalesce(sum(r.bytes), 0) FROM stored_responses r WHERE r.user_id = $1 AND r.expires_at > $2) AS kept
     FROM files WHERE user_id = $1`, [userId, Math.floor(Date.now() / 1000)]);
  return { files: Number(rows[0]!.files), bytes: Number(rows[0]!.bytes) + Number(rows[0]!.kept) };
}
