/**
 * @gateway/worker-runtime owns the process around a model worker (completion, audio): its
 * configuration, Redis, the ModelRouter with its metrics, the job worker with its concurrency,
 * the health and metrics port, and shutdown. A worker service supplies only its queue and the
 * handler of one job.
 */
import { loadServiceConfig, onShutdown, requireSecretKey, type Config } from '@gateway/config';
import type { QueueName } from '@gateway/contracts';
import { createLogger, flushLogs } from '@gateway/log';
import { createDatabase, startRequestLog } from '@gateway/database';
import { countJobs, createWorkerMetrics, observeRouting, requestLogMetrics, serveWorkerPort } from '@gateway/observability';
import { createRedis, startJobWorker, waitForRedis, type JobHandler } from '@gateway/queue';
import { forbidClusterNodes, redisAddresses, setAddressPolicy, setUpstreamLimits } from '@gateway/providers';
import { ModelRouter } from '@gateway/routing';
import { ChannelKeyCipher, isEncryptedKey } from '@gateway/store';
import { startTracing } from '@gateway/tracing';
import { requestLogRow, type ModelPayload } from './request-log-row.ts';
import { describedAsGenAi } from './gen-ai-job-span.ts';

export interface ModelWorkerSpec<P extends ModelPayload> {
  service: string;
  queue: QueueName;
  /** The jobs one process runs at once, from the configuration. */
  concurrency: (config: Config) => number;
  handler: (deps: { router: ModelRouter }) => JobHandler<P>;
}

export async function runModelWorker<P extends ModelPayload>(spec: ModelWorkerSpec<P>): Promise<void> {
  // First: the spans of everything after it go to the provider it registers (when OTEL_* asks for one).
  const tracing = await startTracing(spec.service);
  const config = loadServiceConfig(spec.service);
  // Only the workers that call upstreams decrypt channel keys.
  setUpstreamLimits({ maxReplyBytes: config.UPSTREAM_MAX_REPLY_BYTES, maxEventBytes: config.UPSTREAM_MAX_EVENT_BYTES });
  const addressPolicy = { allowPrivate: config.CHANNEL_ALLOW_PRIVATE_ADDRESSES, forbidden: await redisAddresses(config.redis) };
  setAddressPolicy(addressPolicy);
  const cipher = new ChannelKeyCipher(requireSecretKey(config, spec.service), config.SECRET_KEY_PREVIOUS);
  const log = createLogger(spec.service, config.LOG_LEVEL, config.LOG_FORMAT);
  const metrics = createWorkerMetrics(spec.service);
  const concurrency = spec.concurrency(config);

  const redis = createRedis(config.redis, { name: spec.service });
  await waitForRedis(redis, 30_000);
  // A cluster's every node, not only its seeds.
  forbidClusterNodes(redis, config.redis, addressPolicy);
  const router = await ModelRouter.start({
    redis,
    subscriber: createRedis(config.redis, { name: `${spec.service}-invalidations`, blocking: true }),
    failuresBeforeCooldown: config.CHANNEL_FAILURES_BEFORE_COOLDOWN,
    cooldownMs: config.CHANNEL_COOLDOWN_MS,
    authFailuresBeforeDisable: config.CHANNEL_AUTH_FAILURES_BEFORE_DISABLE,
    leaseTtlMs: config.CHANNEL_LEASE_TTL_MS,
    stickyTtlMs: config.STICKY_TTL_MS,
    stickyOpeningTtlMs: config.STICKY_OPENING_TTL_MS,
    usageFlushMs: config.USAGE_FLUSH_MS,
    quotaCacheMs: config.QUOTA_CACHE_MS,
    // A key stored before keys were encrypted is used as it is, until the rotation rewrites it.
    revealKey: (stored) => (isEncryptedKey(stored) ? cipher.decrypt(stored) : stored),
    observer: observeRouting(metrics, spec.queue),
    log,
  });

  // One row per request in PostgreSQL, written in batches off the reply path (REQUEST_LOG).
  const databaseUrl = config.DATABASE_URL;
  const requestLog = startRequestLog(
    databaseUrl ? () => createDatabase(databaseUrl, { name: `${spec.service}-request-log`, max: 2 }) : undefined,
    config, log, (buffered) => requestLogMetrics(metrics.registry, buffered),
  );

  // `concurrency` jobs at once in this process; more processes share the same queue.
  const worker = await startJobWorker<P>({
    queue: spec.queue,
    redisTarget: config.redis,
    redis,
    concurrency,
    laneConcurrency: config.QUEUE_LANE_CONCURRENCY,
    waitingPerSlot: config.QUEUE_WAITING_PER_SLOT,
    replyCoalesceMs: config.REPLY_COALESCE_MS,
    shards: config.QUEUE_SHARDS,
    handler: describedAsGenAi(spec.handler({ router })),
    // A job nobody waits for gives its hold on the quota back at once, uncharged.
    onJobDropped: (payload) => void router.ledger.settle(payload.caller),
    onJobDone: countJobs(metrics, spec.queue),
    onJobEnd: requestLog && ((end) => requestLog.record(requestLogRow(end, { contentChars: config.LOG_CONTENT_CHARS }))),
    log,
  });

  const http = await serveWorkerPort({
    port: config.METRICS_PORT, host: config.HOST, redis, isRunning: () => worker.worker.isRunning(), registry: metrics.registry,
  });

  onShutdown(async (_signal, deadline) => {
    await worker.close(deadline); // finishes the jobs it holds (ends those left at the deadline), giving their leases back
    await router.close(); // writes the usage not yet written, on `redis`: closed only after it
    await requestLog?.close(); // and the log rows
    http?.close();
    redis.disconnect();
    await tracing.shutdown(); // the spans still buffered
  }, config.SHUTDOWN_TIMEOUT_MS, log);
  log.info({ concurrency, metricsPort: config.METRICS_PORT || undefined }, 'ready');
  flushLogs();
}
export { relayModelJob, type ModelAnswer, type ModelCall, type Piece, type StreamedAnswer, type WholeAnswer } from './model-relay.ts';
export { generateContentWhole, geminiUsage, openGenerateContentStream, promptUsage, type GeminiCall, type GeminiOutputEstimate, type StreamClient } from './gemini-generate.ts';
