/**
 * @gateway/queue owns how the services meet: the BullMQ queues and the reply path (a
 * per-ingress reply stream the workers append to, and cancellation back to them).
 * Redis connections are made by @gateway/config's `createRedis`, re-exported here.
 */
export { createRedis, waitForRedis, isRedisUnavailable, redisUnavailableError, beforeDeadline, type Redis, type ConnectionOptions } from './redis-connection.ts';
export { ReplyInbox } from './reply-inbox.ts';
export { ReplySender } from './reply-sender.ts';
export { JobClient, defaultJobOptions, type RequestOptions, type CaughtUp, type RemovedJob } from './job-client.ts';
export { shardPrefixes } from './queue-shards.ts';
export { CancelListener } from './cancel-listener.ts';
export { INGRESS_STOPPING } from './job-cut-reasons.ts';
export { startJobWorker, type JobContext, type JobEnd, type JobHandler, type JobOutcome, type JobWorker, type JobWorkerOptions } from './job-worker.ts';
export { replyStreamKey, drainedCounterKey, CANCEL_CHANNEL, REPLY_STREAM_TTL_MS } from './reply-keys.ts';
export { FairShares, type FairPlace, type Tenant } from './fair-shares.ts';
export { registerWorker, workersOf, workerRegistryKey, WORKER_HEARTBEAT_MS, WORKER_STALE_MS, type WorkerProcess } from './worker-registry.ts';
export { PAYLOAD_INLINE_MAX_CHARS, textSlices } from './payload-beside.ts';
export { finishedJobData, KEPT_COMPLETED, KEPT_FAILED } from './finished-jobs.ts';
