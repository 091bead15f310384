import type { Database } from '@gateway/database';
import { notConfigured } from '@gateway/contracts';

/** What the Files and Batch API routes are given. */
export interface BatchApiOptions {
  /** PostgreSQL; unset, the routes answer 503 (the gateway runs without DATABASE_URL). */
  database?: Database;
  /** The largest input file (FILE_MAX_BYTES, FILE_MAX_LINES). */
  files: { maxBytes: number; maxLines: number };
  /** How long a batch's "24h" window really lasts (BATCH_COMPLETION_WINDOW_MS). */
  completionWindowMs: number;
}

/** The database, or a 503 saying this gateway has none. */
export function databaseOf(options: Pick<BatchApiOptions, 'database'>): Database {
  if (!options.database) {
    throw notConfigured('the Files and Batch APIs need PostgreSQL: this gateway runs without DATABASE_URL');
  }
  return options.database;
}
