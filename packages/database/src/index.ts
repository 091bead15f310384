/**
 * @gateway/database owns PostgreSQL, the system of record for what grows and is queried: the
 * Batch API's files, batches and their lines. Its connection pool, its migrations and the
 * stores over its tables (the embedded server for `npm start` and the tests is
 * @gateway/local-stack's).
 */
export { createDatabase, inTransaction, isDatabaseUnavailable, isRefusedForItsValues, isStatementTimeout, databaseUnavailableError, orUnavailable, type Database, type DatabaseOptions } from './connection.ts';
export { migrate, MIGRATIONS_DIR } from './migrate.ts';
export { BatchStore, batchObject, type BatchRow, type OwnedBatch, type BatchPageQuery } from './batch-store.ts';
export { FileStore, fileCapRefusal, type UserFileCap, type FileUsage } from './file-store.ts';
export { newFileId, newBatchId, lineResultId, unixNow } from './ids.ts';
export { forgetUser, highestUserIdOnRecord } from './user-records.ts';
export { storableText, storableJson } from './storable.ts';
export { ResponseStore, identifiedItems, type StoredResponse, type StoredItem } from './response-store.ts';
export { BatchRuns, type LineToRun, type LineResult, type BatchEnd } from './batch-runs.ts';
export { createBatchResultFiles, resultFileContent, type ResultKind } from './result-files.ts';
export { RequestLogWriter, startRequestLog, type RequestLogConfig, type RequestLogWriterOptions } from './request-log-writer.ts';
export { RequestLogQuery, type RequestLogEntry, type RequestLogStat, type ChannelHealth, type Spend, type SpendLine } from './request-log-query.ts';
