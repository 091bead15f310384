import { loadServiceConfig, onShutdown } from '@gateway/config';
import type { AdminJobPayload } from '@gateway/admin-operations';
import { QueueName } from '@gateway/contracts';
import { createLogger, flushLogs } from '@gateway/log';
import { countJobs, createWorkerMetrics, serveWorkerPort } from '@gateway/observability';
import { createRedis, startJobWorker, waitForRedis } from '@gateway/queue';
import { createStore, migrateKeyLayout } from '@gateway/store';
import { adminJobHandler } from './processor.ts';
import { ensureRootUser } from './root-user.ts';

const config = loadServiceConfig('admin-worker');
const log = createLogger('admin-worker', config.LOG_LEVEL, config.LOG_FORMAT);
const metrics = createWorkerMetrics('admin-worker');

const redis = createRedis(config.redis, { name: 'admin-worker' });
await waitForRedis(redis, 30_000);
const moved = await migrateKeyLayout(redis);
if (moved > 0) log.info({ keys: moved }, 'store keys moved to their {store}-tagged names');
const store = createStore(redis);
const skeletons = await store.users.indexSkeletons();
if (skeletons > 0) log.info({ entries: skeletons }, "existing usernames' confusable skeletons indexed");
await ensureRootUser(store, config, log);

const worker = await startJobWorker<AdminJobPayload>({
  queue: QueueName.admin,
  redisTarget: config.redis,
  redis,
  concurrency: config.ADMIN_CONCURRENCY,
  handler: adminJobHandler(store),
  onJobDone: countJobs(metrics, QueueName.admin),
  log,
});

const http = await serveWorkerPort({
  port: config.METRICS_PORT, host: config.HOST, redis, isRunning: () => worker.worker.isRunning(), registry: metrics.registry,
});

onShutdown(async () => {
  await worker.close();
  http?.close();
  redis.disconnect();
}, config.SHUTDOWN_TIMEOUT_MS, log);
log.info({ concurrency: config.ADMIN_CONCURRENCY, metricsPort: config.METRICS_PORT || undefined }, 'ready');
flushLogs();
