import { randomUUID } from 'node:crypto';
import { loadServiceConfig, onShutdown, requireSecretKey } from '@gateway/config';
import { createLogger, flushLogs } from '@gateway/log';
import { createGatewayMetrics, requestLogMetrics } from '@gateway/observability';
import { createRedis, JobClient, ReplyInbox, waitForRedis } from '@gateway/queue';
import { forbidClusterNodes, ownAddresses, redisAddresses } from '@gateway/providers';
import { ChannelKeyCipher, createStore } from '@gateway/store';
import { createDatabase, migrate, startRequestLog } from '@gateway/database';
import { LOG_READ_CONNECTIONS } from './management/request-log-routes.ts';
import { DOWNLOAD_CONNECTIONS, UPLOAD_CONNECTIONS } from './batches/file-routes.ts';
import { buildGateway } from './app.ts';
import { RefusalLog } from './refusals/refusal-log.ts';
import { startTracing } from '@gateway/tracing';

// First: the spans of everything after it go to the provider it registers (when OTEL_* asks for one).
const tracing = await startTracing('gateway');

const config = loadServiceConfig('gateway');
const secretKey = requireSecretKey(config, 'gateway');
const log = createLogger('gateway', config.LOG_LEVEL, config.LOG_FORMAT);

const ingressId = randomUUID();
// Channels may not point at this gateway's Redis or at the gateway itself (added once listening).
const addressPolicy = { allowPrivate: config.CHANNEL_ALLOW_PRIVATE_ADDRESSES, forbidden: await redisAddresses(config.redis) };
// Fail fast: while Redis is down a request gets a 503 at once instead of waiting for it.
const redis = createRedis(config.redis, { name: `gateway-${ingressId}`, failFast: true });
try {
  await waitForRedis(redis, 60_000);
} catch (error) {
  log.fatal({ reason: (error as Error).message }, 'cannot reach Redis (REDIS_URL or REDIS_CLUSTER_NODES)');
  process.exit(1);
}
// A cluster's every node, not only its seeds.
forbidClusterNodes(redis, config.redis, addressPolicy);
// PostgreSQL keeps the Batch API's files and batches; live requests never wait on it.
if (config.DATABASE_URL) {
  try {
    await migrate(config.DATABASE_URL, (message) => log.debug({ message }, 'migration'));
  } catch (error) {
    log.fatal({ reason: error instanceof Error ? error.message : String(error) }, 'cannot reach or migrate PostgreSQL (DATABASE_URL)');
    process.exit(1);
  }
}
const database = config.DATABASE_URL ? createDatabase(config.DATABASE_URL, { name: `gateway-${ingressId}` }) : undefined;
// Reads of the request log, which a user can make as heavy as its filters allow, on a pool of
// their own with a statement time-out: they never take the connections of files, batches and
// the log's writes (management/request-log-routes.ts).
const logReads = config.DATABASE_URL
  ? createDatabase(config.DATABASE_URL, { name: `gateway-log-reads-${ingressId}`, max: LOG_READ_CONNECTIONS, statementTimeoutMs: config.LOG_QUERY_TIMEOUT_MS })
  : undefined;
// Uploads, each holding a connection while its client sends, on a pool of their own (batches/file-routes.ts).
const uploads = config.DATABASE_URL ? createDatabase(config.DATABASE_URL, { name: `gateway-uploads-${ingressId}`, max: UPLOAD_CONNECTIONS }) : undefined;
// A download waits its turn for one, however long, while others' clients read their large lines:
// it has begun its answer, and a time-out could only cut it short.
const downloads = config.DATABASE_URL
  ? createDatabase(config.DATABASE_URL, { name: `gateway-downloads-${ingressId}`, max: DOWNLOAD_CONNECTIONS, connectTimeoutMs: 0 })
  : undefined;
const inbox = new ReplyInbox(ingressId, createRedis(config.redis, { name: `gateway-replies-${ingressId}`, blocking: true }), redis);
inbox.start();
// Its jobs' recent few stay on the queue dashboard once finished, without their payloads.
const jobs = new JobClient(redis, inbox, { shards: config.QUEUE_SHARDS, keepFinishedOneIn: config.QUEUE_BOARD_KEEP_ONE_IN });
const metrics = createGatewayMetrics();
// The rows of requests that end here without a worker (refused, removed unrun); workers write the rest.
const requestLog = startRequestLog(database && (() => database), config, log, (buffered) => requestLogMetrics(metrics.registry, buffered));
// The model routes' refusals, sampled so that a flood of them adds a bounded number of rows.
const refusals = requestLog && new RefusalLog(requestLog, {
  windowMs: config.REFUSAL_LOG_WINDOW_MS, rowsPerWindow: config.REFUSAL_LOG_ROWS, keysPerAddress: config.REFUSAL_LOG_KEYS_PER_ADDRESS,
}).start();
const gateway = buildGateway({
  redis,
  store: createStore(redis),
  jobs,
  inbox,
  metrics,
  log,
  requestTimeoutMs: config.REQUEST_TIMEOUT_MS,
  bodyLimitBytes: config.BODY_LIMIT_BYTES,
  managementBodyLimitBytes: config.MANAGEMENT_BODY_LIMIT_BYTES,
  managementChangesPerMinute: config.MANAGEMENT_CHANGES_PER_MINUTE,
  headersTimeoutMs: config.HEADERS_TIMEOUT_MS,
  bodyTimeoutMs: config.BODY_TIMEOUT_MS,
  keepAliveTimeoutMs: config.KEEP_ALIVE_TIMEOUT_MS,
  clientStallTimeoutMs: config.CLIENT_STALL_TIMEOUT_MS,
  responseBufferBytes: config.RESPONSE_BUFFER_BYTES,
  unreadBodyBytesPerSecond: config.UNREAD_BODY_BYTES_PER_SECOND,
  bodyBudget: { perKeyBytes: config.BODY_BUDGET_PER_KEY_BYTES, perUserBytes: config.BODY_BUDGET_PER_USER_BYTES, totalBytes: config.BODY_BUDGET_BYTES, userLeaseTtlMs: config.BODY_LEASE_TTL_MS, defaultBodyLimit: config.BODY_LIMIT_BYTES },
  cipher: new ChannelKeyCipher(secretKey, config.SECRET_KEY_PREVIOUS),
  loginThrottle: {
    failuresPerUser: config.LOGIN_FAILURES_PER_USER,
    failuresPerAddress: config.LOGIN_FAILURES_PER_ADDRESS,
    failuresPerUserOverall: config.LOGIN_FAILURES_PER_USER_OVERALL,
    windowSeconds: config.LOGIN_WINDOW_SECONDS,
  },
  passwordHashConcurrency: config.PASSWORD_HASH_CONCURRENCY,
  addressPolicy,
  dashboardPayloads: config.DASHBOARD_PAYLOADS,
  trustProxy: config.TRUST_PROXY,
  maxBacklog: config.ADMISSION_MAX_BACKLOG,
  intakePerUser: config.INTAKE_PER_USER,
  adminToken: config.ADMIN_TOKEN,
  database,
  logDatabase: logReads,
  uploadDatabase: uploads,
  downloadDatabase: downloads,
  files: { maxBytes: config.FILE_MAX_BYTES, maxLines: config.FILE_MAX_LINES, maxLineBytes: config.BODY_LIMIT_BYTES, userMaxBytes: config.FILE_USER_MAX_BYTES, userMaxFiles: config.FILE_USER_MAX_FILES, spoolDir: config.UPLOAD_SPOOL_DIR || undefined, spoolBytes: config.UPLOAD_SPOOL_BYTES },
  batchCompletionWindowMs: config.BATCH_COMPLETION_WINDOW_MS,
  batchUserMaxOpen: config.BATCH_USER_OPEN,
  responseRetentionDays: config.RESPONSE_RETENTION_DAYS,
  requestLog,
  refusals,
});

await gateway.app.listen({ port: config.PORT, host: config.HOST, backlog: config.LISTEN_BACKLOG });
const address = gateway.app.server.address();
const port = typeof address === 'object' && address ? address.port : config.PORT;
addressPolicy.forbidden.push(...(await ownAddresses(config.HOST, port)));

onShutdown(async (_signal, deadline) => {
  gateway.beginShutdown();
  // Still listening, new requests answered 503 with Retry-After, until those in flight end.
  const cut = await gateway.drain(deadline);
  if (cut > 0) {
    log.warn({ requests: cut }, 'shutdown deadline passed; requests still in flight were ended with a 503 (an error event for a stream)');
    gateway.app.server.closeAllConnections();
  }
  await gateway.app.close();
  await inbox.stop();
  await jobs.close();
  refusals?.close();
  await requestLog?.close();
  await database?.end();
  await logReads?.end();
  await uploads?.end();
  await downloads?.end();
  redis.disconnect();
  await tracing.shutdown(); // the spans still buffered
}, config.SHUTDOWN_TIMEOUT_MS, log);

log.info({ port, host: config.HOST, ingressId }, 'ready');
flushLogs();
