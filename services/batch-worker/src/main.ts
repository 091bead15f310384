import { randomUUID } from 'node:crypto';
import { KeyRateLimit, ModelAdmission, UserBodyBudget } from '@gateway/admission';
import { loadServiceConfig, onShutdown } from '@gateway/config';
import { BatchRuns, createDatabase, migrate } from '@gateway/database';
import { createLogger, flushLogs } from '@gateway/log';
import { startTracing } from '@gateway/tracing';
import { createWorkerMetrics, serveWorkerPort } from '@gateway/observability';
import { createRedis, FairShares, waitForRedis } from '@gateway/queue';
import { createStore, InvalidationFeed, PriceBook, QuotaHolds, touchesCallers } from '@gateway/store';
import { BatchKeys } from './batch-keys.ts';
import { BatchRunner } from './batch-runner.ts';

// First: the spans of everything after it go to the provider it registers (when OTEL_* asks for one).
const tracing = await startTracing('batch-worker');
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

const keys = new BatchKeys(store);
const changes = InvalidationFeed.beside(redis, 'batch-worker-invalidations');
// As the gateway's key cache does: any key or user changed, every key is read again.
changes.on((change) => {
  if (touchesCallers(change)) keys.forget();
});
await changes.start();
// Prices, for the cost a line holds on a budget in money.
const prices = await new PriceBook(redis, { feed: changes }).start();

const runs = new BatchRuns(database);
// A user's batches hold at most three quarters of its body budget, leaving the rest to its live requests.
const bodies = { budget: new UserBodyBudget(redis, `batch-worker-${randomUUID()}`, { leaseTtlMs: config.BODY_LEASE_TTL_MS }), limit: Math.floor((config.BODY_BUDGET_PER_USER_BYTES * 3) / 4) };
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
    admission: new ModelAdmission({ rateLimit: new KeyRateLimit(redis), holds: new QuotaHolds(redis), prices, fairShares: new FairShares(redis) }),
    holderOf: (batch) => keys.holderOf(batch),
    userMaxBytes: config.FILE_USER_MAX_BYTES,
    bodies,
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
  await bodies.budget.close();
  await database.end();
  changes.close();
  http?.close();
  redis.disconnect();
  await tracing.shutdown(); // the spans still buffered
}, config.SHUTDOWN_TIMEOUT_MS, log);
log.info({ runner: runner.id, window: config.BATCH_WINDOW, batches: config.BATCH_WORKER_BATCHES }, 'ready');
flushLogs();
