import type { FileObject } from '@gateway/contracts';
import type { Database } from './connection.ts';

/**
 * Files of the OpenAI Files API, in PostgreSQL: an upload's lines are rows of `file_lines`; a
 * batch's output and error files are read from its `batch_lines`.
 * (Being written: upload, list, content, delete and result files.)
 */
export class FileStore {
  private readonly db: Database;

  constructor(db: Database) {
    this.db = db;
  }

  /** The file, if it exists and (when `userId` is given) belongs to that user. */
  async get(id: string, userId?: number): Promise<FileObject | undefined> {
    const { rows } = await this.db.query<{ id: string; bytes: string; created_at: string; filename: string; purpose: string }>(
      `SELECT id, bytes, created_at, filename, purpose FROM files WHERE id = $1 AND ($2::integer IS NULL OR user_id = $2)`, [id, userId ?? null]);
    const row = rows[0];
    if (!row) return undefined;
    return { id: row.id, object: 'file', bytes: Number(row.bytes), created_at: Number(row.created_at), filename: row.filename, purpose: row.purpose, status: 'processed', expires_at: null, status_details: null };
  }
}
