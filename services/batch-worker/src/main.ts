import { holderOf, KeyRateLimit, ModelAdmission, type KeyHolder } from '@gateway/admission';
import { loadServiceConfig, onShutdown } from '@gateway/config';
import { invalidApiKey, TokenStatus, UserStatus } from '@gateway/contracts';
import { BatchRuns, createDatabase, migrate, type BatchRow } from '@gateway/database';
import { createLogger, flushLogs } from '@gateway/log';
import { createWorkerMetrics, serveWorkerPort } from '@gateway/observability';
import { createRedis, FairShares, waitForRedis } from '@gateway/queue';
import { createStore, InvalidationFeed, QuotaHolds, touchesCallers } from '@gateway/store';
import { BatchRunner } from './batch-runner.ts';

const config = loadServiceConfig('batch-worker');
const log = createLogger('batch-worker', config.LOG_LEVEL, config.LOG_FORMAT);
if (!config.DATABASE_URL) {
  log.fatal('the batch worker needs PostgreSQL: set DATABASE_URL');
  process.exit(1);
}
const redis = createRedis(config.redis, { name: 'batch-worker' });
await waitForRedis(redis, 30_000);
await migrate(config.DATABASE_URL, (message) => log.debug({ message }, 'migration'));
const database = createDatabase(config.DATABASE_URL, { name: 'batch-worker' });
const store = createStore(redis);

/**
 * The key that created the batch, with its and its user's limits as they are now: read at most
 * once a second per key, not for every line, and again at once when the key or its user changes
 * (the store's change feed). A key disabled or deleted, or a user's models narrowed, had the
 * batch's lines admitted for a second more: 700 of them against a fast upstream.
 */
const holders = new Map<number, { at: number; key: Promise<BatchKey> }>();
async function batchHolder(batch: BatchRow): Promise<KeyHolder> {
  let cached = holders.get(batch.token_id);
  if (!cached || Date.now() - cached.at >= 1000) {
    const key = readKey(batch);
    key.catch(() => holders.delete(batch.token_id));
    if (holders.size > 10_000) holders.clear();
    holders.set(batch.token_id, (cached = { at: Date.now(), key }));
  }
  const { holder, expiresAtMs } = await cached.key;
  // At each line, not once a read: a key past its expired_time runs no more of its batch's lines
  // (as a live request with it gets 401), where before the batch ran on to its end.
  if (expiresAtMs <= Date.now()) throw invalidApiKey('the API key that created this batch has expired');
  return holder;
}
const changes = InvalidationFeed.beside(redis, 'batch-worker-invalidations');
// As the gateway's key cache does: any key or user changed, every holder is read again.
changes.on((change) => {
  if (touchesCallers(change)) holders.clear();
});
await changes.start();

/** The batch's key with its limits, and when it expires (`expired_time`; never: Infinity). */
interface BatchKey {
  holder: KeyHolder;
  expiresAtMs: number;
}

async function readKey(batch: BatchRow): Promise<BatchKey> {
  const token = await store.tokens.get(batch.token_id);
  if (!token) throw invalidApiKey('the API key that created this batch no longer exists');
  if (token.status !== TokenStatus.enabled) throw invalidApiKey('the API key that created this batch is disabled, expired or exhausted');
  const user = await store.users.get(token.user_id);
  if (!user || user.status !== UserStatus.enabled) throw invalidApiKey("the batch's user is disabled");
  return { holder: holderOf(token, user), expiresAtMs: token.expired_time === -1 ? Infinity : token.expired_time * 1000 };
}

const runs = new BatchRuns(database);
const runner = new BatchRunner({
  runs,
  maxBatches: config.BATCH_WORKER_BATCHES,
  perUser: config.BATCH_USER_BATCHES,
  retentionDays: config.BATCH_RETENTION_DAYS,
  leaseMs: config.BATCH_LEASE_MS,
  log,
  feed: {
    runs,
    database,
    redis,
    openReader: () => createRedis(config.redis, { name: 'batch-worker-replies', blocking: true }),
    admission: new ModelAdmission({ rateLimit: new KeyRateLimit(redis), holds: new QuotaHolds(redis), fairShares: new FairShares(redis) }),
    holderOf: batchHolder,
    window: config.BATCH_WINDOW,
    lineTimeoutMs: config.BATCH_LINE_TIMEOUT_MS,
    attempts: config.BATCH_LINE_ATTEMPTS,
    shards: config.QUEUE_SHARDS,
    log,
  },
});
runner.start();

const metrics = createWorkerMetrics('batch-worker');
const http = await serveWorkerPort({ port: config.METRICS_PORT, host: config.HOST, redis, isRunning: () => true, registry: metrics.registry });

onShutdown(async () => {
  await runner.stop(); // gives its batches back; their lines in flight are followed by the next holder
  await database.end();
  changes.close();
  http?.close();
  redis.disconnect();
}, config.SHUTDOWN_TIMEOUT_MS, log);
log.info({ runner: runner.id, window: config.BATCH_WINDOW, batches: config.BATCH_WORKER_BATCHES }, 'ready');
flushLogs();
