import type { Database } from '@gateway/database';
import { notConfigured } from '@gateway/contracts';
import type { UserStore } from '@gateway/store';

/** How large a file may be, and what one user may keep (FILE_MAX_BYTES, FILE_MAX_LINES, FILE_USER_MAX_BYTES, FILE_USER_MAX_FILES). */
export interface FileLimits {
  maxBytes: number;
  maxLines: number;
  /** The most one line may be: what one request may be sent alone (BODY_LIMIT_BYTES). */
  maxLineBytes?: number;
  /** Bytes of uploads one user may keep, all together. */
  userMaxBytes: number;
  /** Uploads one user may keep. */
  userMaxFiles: number;
  /** Where uploads are spooled while their clients send them (UPLOAD_SPOOL_DIR); the system's temporary directory when unset. */
  spoolDir?: string;
  /** Bytes all uploads may hold in their spools at once (UPLOAD_SPOOL_BYTES); no limit when unset. */
  spoolBytes?: number;
}

/** What the Files and Batch API routes are given. */
export interface BatchApiOptions {
  /** PostgreSQL; unset, the routes answer 503 (the gateway runs without DATABASE_URL). */
  database?: Database;
  /** The same PostgreSQL, a pool of its own for uploads' writes (from their spools); `database` when unset. */
  uploadDatabase?: Database;
  /** The same PostgreSQL, a pool of its own for downloads' lines too large for a page (a connection held while one is read); `database` when unset. */
  downloadDatabase?: Database;
  /** The largest input file (FILE_MAX_BYTES, FILE_MAX_LINES). */
  files: FileLimits;
  /** How long a batch's "24h" window really lasts (BATCH_COMPLETION_WINDOW_MS). */
  completionWindowMs: number;
  /** Batches of one user not yet ended (BATCH_USER_OPEN). */
  userMaxOpenBatches: number;
  /** The store's users: an upload's user is read again before its file is kept (deleted or disabled while it sent, nothing is kept). */
  users?: Pick<UserStore, 'get'>;
}

/** The database, or a 503 saying this gateway has none. */
export function databaseOf(options: Pick<BatchApiOptions, 'database'>): Database {
  if (!options.database) {
    throw notConfigured('the Files and Batch APIs need PostgreSQL: this gateway runs without DATABASE_URL');
  }
  return options.database;
}
