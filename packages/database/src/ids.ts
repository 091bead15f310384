import { randomBytes } from 'node:crypto';

/** Ids in OpenAI's shapes: `file-…`, `batch_…`, `batch_req_…`. */
export const newFileId = () => `file-${randomBytes(12).toString('hex')}`;
export const newBatchId = () => `batch_${randomBytes(12).toString('hex')}`;
export const lineResultId = (batchId: string, line: number) => `batch_req_${batchId.slice('batch_'.length)}_${line}`;

/** Unix seconds, as OpenAI's objects carry them. */
export const unixNow = () => Math.floor(Date.now() / 1000);
