import { randomUUID } from 'node:crypto';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { badRequest, loopDetected, overloaded, QueueName, withoutPathKeys } from '@gateway/contracts';
import type { Logger } from '@gateway/log';
import type { GatewayMetrics } from '@gateway/observability';
import { FairShares, type JobClient, type Redis, type ReplyInbox } from '@gateway/queue';
import { HOP_HEADER, type AddressPolicy } from '@gateway/providers';
import { PriceBook, QuotaHolds, type ChannelKeyCipher, type Store } from '@gateway/store';
import { AdminJobs } from './management/admin-jobs.ts';
import { BatchOverview } from './batches/batch-overview.ts';
import type { FileLimits } from './batches/batch-api-options.ts';
import { LoginThrottle, type LoginThrottleOptions } from './auth/login-throttle.ts';
import { PasswordLane } from './auth/password-lane.ts';
import { PasswordSignIn } from './auth/password-sign-in.ts';
import { rootCredentialCheck } from './auth/root-credential.ts';
import { BodyBudget, type BodyBudgetOptions } from './intake/body-budget.ts';
import { FairTurns } from './intake/fair-turns.ts';
import { IntakeWindow } from './intake/intake-window.ts';
import { takeRequestsInTurns } from './intake/request-turns.ts';
import { CredentialPlaces } from './intake/credential-places.ts';
import { KeyRateLimit, UserBodyBudget } from '@gateway/admission';
import { ModelAdmission } from '@gateway/admission';
import { ApiKeyAuth } from './auth/api-key.ts';
import { ModelCatalog } from './models/model-catalog.ts';
import { watchClient } from './http/client-signal.ts';
import { adminFormat, formatForUrl, pathOf, sendError, useErrorFormat } from './http/error-formats.ts';
import { registerContentDecoding } from './http/content-encoding.ts';
import { clientErrorHandler, rememberRequestPaths } from './http/client-errors.ts';
import { registerJsonBodyParser } from './http/json-body.ts';
import { wireConstraint } from './http/wire-constraint.ts';
import { closeIdleConnections } from './http/idle-connections.ts';
import { RequestsInFlight } from './http/requests-in-flight.ts';
import { dropStalledReaders } from './http/stalled-readers.ts';
import { UnreadBodies } from './http/unread-bodies.ts';
import { DASHBOARD_PATH, dashboardRoutes } from './dashboard/dashboard-routes.ts';
import { consoleRoutes } from './console/console-routes.ts';
import { ADMIN_PATH } from './dashboard/admin-session.ts';
import { healthRoutes } from './http/health-routes.ts';
import { metricsRoutes } from './management/metrics-routes.ts';
import { changeFeed } from './auth/change-feed.ts';
import { geminiApi } from './apis/gemini-api.ts';
import { anthropicApi } from './apis/anthropic-api.ts';
import { queueBacklog } from './intake/queue-backlog.ts';
import { managementApi } from './apis/management-api.ts';
import { openaiApi } from './apis/openai-api.ts';
import type { Database } from '@gateway/database';
import type { RequestLogSink } from './models/model-relay.ts';
import type { RefusalLog } from './refusals/refusal-log.ts';
import { OperationsSnapshot } from './management/operations-snapshot.ts';

export interface GatewayDeps {
  redis: Redis;
  store: Store;
  jobs: JobClient;
  inbox: ReplyInbox;
  metrics: GatewayMetrics;
  log: Logger;
  requestTimeoutMs: number;
  /** The largest model request body (BODY_LIMIT_BYTES). */
  bodyLimitBytes: number;
  /** TRUST_PROXY: whose X-Forwarded-For/-Proto/-Host to believe: proxy addresses, or (true) the one proxy in front whatever its address. */
  trustProxy?: boolean | string;
  /** The largest management, login or dashboard body (MANAGEMENT_BODY_LIMIT_BYTES). */
  managementBodyLimitBytes: number;
  /** MANAGEMENT_CHANGES_PER_MINUTE. */
  managementChangesPerMinute: number;
  /** A client's headers must arrive within this time, and its whole request within bodyTimeoutMs. */
  headersTimeoutMs: number;
  bodyTimeoutMs: number;
  /** A connection with no request in progress is closed after this long (KEEP_ALIVE_TIMEOUT_MS). */
  keepAliveTimeoutMs: number;
  /** A client that takes no byte of its answer for this long is dropped (CLIENT_STALL_TIMEOUT_MS). */
  clientStallTimeoutMs: number;
  /** How fast bodies answered before they were read are read and dropped, all together (UNREAD_BODY_BYTES_PER_SECOND). */
  unreadBodyBytesPerSecond: number;
  /** Bytes of model request bodies in flight, per key, per user and in all (BODY_BUDGET_PER_KEY_BYTES, BODY_BUDGET_PER_USER_BYTES, BODY_BUDGET_BYTES). */
  bodyBudget: BodyBudgetOptions;
  /** Bytes of one answer the gateway buffers for its client (RESPONSE_BUFFER_BYTES). */
  responseBufferBytes: number;
  /** Encrypts channel keys before they are enqueued (SECRET_KEY). */
  cipher: ChannelKeyCipher;
  /** Failed sign-ins before a username or an address must wait, and the window they count in. */
  loginThrottle: LoginThrottleOptions;
  /** scrypt computations at once in this gateway. */
  passwordHashConcurrency: number;
  /** Where a channel's base_url may point (its own Redis and address are added once known). */
  addressPolicy: AddressPolicy;
  /** How much of a job's payload the dashboard shows. */
  dashboardPayloads: 'truncated' | 'full' | 'none';
  /** A queue backlog this long is refused outright (admission control). */
  maxBacklog: number;
  /** ADMIN_TOKEN, when this gateway's environment sets it: `/readyz` waits until it is root's. */
  adminToken?: string;
  /** PostgreSQL (DATABASE_URL) for the Files and Batch APIs; without it they answer 503. */
  database?: Database;
  /** The same PostgreSQL, a pool of its own for reads of the request log (LOG_QUERY_TIMEOUT_MS); `database` when unset. */
  logDatabase?: Database;
  /** Requests of one user between their body's parse and their enqueue at once (INTAKE_PER_USER); 0 or unset, no window. */
  intakePerUser?: number;
  /** The same PostgreSQL, a pool of its own for file uploads (UPLOAD_CONNECTIONS); `database` when unset. */
  uploadDatabase?: Database;
  downloadDatabase?: Database;
  /** The largest batch input file (FILE_MAX_BYTES, FILE_MAX_LINES). */
  files: FileLimits;
  /** How long a batch's "24h" window lasts (BATCH_COMPLETION_WINDOW_MS). */
  batchCompletionWindowMs: number;
  /** Batches of one user not yet ended (BATCH_USER_OPEN). */
  batchUserMaxOpen: number;
  /** Days a stored response is kept (RESPONSE_RETENTION_DAYS). */
  responseRetentionDays?: number;
  /** Rows for the requests that end here without running on a worker (refused, or removed unrun). */
  requestLog?: RequestLogSink;
  /** Rows for the requests the model routes refuse, sampled (refusals/refusal-log.ts). */
  refusals?: RefusalLog;
}

export interface Gateway {
  app: FastifyInstance;
  /** Turns readiness to 503 and refuses new requests (graceful shutdown). */
  beginShutdown(): void;
  /**
   * After `beginShutdown`, still listening: resolves once the requests in flight have ended, or
   * at `deadline` having ended those left (an error in their wire format), with their number.
   */
  drain(deadline: number): Promise<number>;
}

/** A client's X-Request-Id as the gateway takes it: letters, digits and `._:-`, at most 128; else none. */
const clientRequestId = (header: string | string[] | undefined): string | undefined =>
  typeof header === 'string' && /^[\w.:-]{1,128}$/.test(header) ? header : undefined;

export function buildGateway(deps: GatewayDeps): Gateway {
  let stopping = false;
  const app = Fastify({
    loggerInstance: deps.log as FastifyBaseLogger,
    logController: new LogController({ disableRequestLogging: true, requestIdLogLabel: 'reqId' }),
    // Small by default (unmatched routes included); the model routes raise their own limit.
    bodyLimit: deps.managementBodyLimitBytes,
    // A client's X-Request-Id names its request (the logs, the request log's row) when it is a
    // plain id of at most 128 characters; any other is replaced by one of the gateway's: 3,200
    // characters were too long for the request log's index, and the row was lost.
    requestIdHeader: false,
    genReqId: (raw) => clientRequestId(raw.headers['x-request-id']) ?? randomUUID(),
    // Behind a proxy (TRUST_PROXY): request.ip is the client's, request.protocol the proxy's scheme.
    // TRUST_PROXY=true trusts the one proxy in front, so the client is the address it wrote, not
    // the first of the header (Fastify's own `true`), and not nobody (Fastify's own hop count).
    trustProxy: deps.trustProxy === true ? trustedHops(1) : deps.trustProxy ?? false,
    routerOptions: { ignoreTrailingSlash: true, constraints: { wire: wireConstraint } },
    return503OnClosing: true,
    clientErrorHandler,
    // The front door counts no connections: a burst from one address (or from everyone behind
    // one load balancer) is read and answered, never reset. It bounds what costs without doing
    // work: a connection that begins no request, before its first or between two, whatever it
    // sends (idle-connections.ts), one that trickles its headers (headersTimeout), one whose
    // body trickles (requestTimeout), both checked every second (Node checks every 30 s by
    // default), and
    // bytes held (the body budget, intake/body-budget.ts; the reply buffer, models/model-relay.ts).
    requestTimeout: deps.bodyTimeoutMs,
    keepAliveTimeout: deps.keepAliveTimeoutMs,
    http: { headersTimeout: deps.headersTimeoutMs, connectionsCheckingInterval: 1000 },
    // A URL Fastify cannot decode gets the route family's error format, never an echo of the
    // URL (its query string may hold a key).
    frameworkErrors: (error, request, reply) => {
      const message = error.code === 'FST_ERR_BAD_URL' ? 'malformed URL: the path is not valid percent-encoding' : 'bad request';
      void sendError(reply, badRequest(message), formatForUrl(request.url));
    },
  });

  // Fastify begins the requests read in a loop turn a few at a time, round robin between
  // credentials (those its hooks accepted each in a place of their own).
  const credentialPlaces = new CredentialPlaces();
  app.decorate('credentialPlaces', credentialPlaces);
  const requestTurns = takeRequestsInTurns(app.server, { places: credentialPlaces });
  const inFlight = new RequestsInFlight(app.server);
  closeIdleConnections(app.server, { headersMs: deps.headersTimeoutMs, keepAliveMs: deps.keepAliveTimeoutMs });
  dropStalledReaders(app.server, deps.clientStallTimeoutMs, () => deps.log.warn('a client that stopped reading its answer was dropped'));

  // JSON only: anything else is a 415, not a body the routes would misread.
  app.removeContentTypeParser(['text/plain']);
  registerJsonBodyParser(app);
  registerContentDecoding(app);
  rememberRequestPaths(app);
  app.decorateRequest('keyHolder', null);
  app.decorateRequest('actor', null);
  app.decorateRequest('refusal', null);
  app.decorateRequest('loggedAsJob', false);
  app.decorateRequest('relayTrace', null);

  app.addHook('onRequest', async (request, reply) => {
    watchClient(request, reply);
    reply.header('x-request-id', request.id);
    // A request from one of our own workers means a channel points back at a gateway.
    if (request.headers[HOP_HEADER] !== undefined) {
      throw loopDetected('this request came from a gateway worker: a channel points at a gateway');
    }
    if (stopping && !request.url.startsWith('/healthz') && !request.url.startsWith('/readyz')) {
      throw overloaded('the gateway is shutting down; retry on another instance');
    }
  });
  // While draining, every answer closes its connection, so keep-alive clients move elsewhere.
  // A body answered before it was read is dropped at a bounded rate (unread-bodies.ts).
  const unreadBodies = new UnreadBodies(deps.unreadBodyBytesPerSecond);
  app.addHook('onSend', async (request, reply) => {
    if (stopping) reply.header('connection', 'close');
    else if (unreadBodies.keepsConnection(request.raw, reply.statusCode)) reply.header('connection', 'keep-alive');
    unreadBodies.dropRest(request.raw);
  });
  // One log line per request, with its id; headers are not logged at all.
  app.addHook('onResponse', async (request, reply) => {
    const route = request.routeOptions.url ?? 'unmatched';
    deps.metrics.requests.inc({ route, method: request.method, status: reply.statusCode });
    deps.metrics.duration.observe({ route, method: request.method }, reply.elapsedTime / 1000);
    request.log.info(
      // A client that put its key in the path (a 404) does not have it written to the log; a long
      // model name in a Gemini path is kept.
      { method: request.method, path: withoutPathKeys(pathOf(request.url)), status: reply.statusCode, ms: Math.round(reply.elapsedTime) },
      'request',
    );
  });

  // Outside the model and management APIs (health, metrics, the dashboard, unknown paths): the
  // management envelope. Each API plugin sets its own.
  useErrorFormat(app, adminFormat);

  app.register(healthRoutes, { redis: deps.redis, isStopping: () => stopping, notYetServing: rootCredentialCheck(deps.store.users, deps.adminToken) });
  const operations = new OperationsSnapshot(deps.redis, deps.jobs, deps.store.channels);
  app.register(metricsRoutes, { metrics: deps.metrics, jobs: deps.jobs, inbox: deps.inbox, users: deps.store.users, operations });
  const lane = new PasswordLane({ concurrency: deps.passwordHashConcurrency });
  const signIn = new PasswordSignIn(deps.store.users, lane, new LoginThrottle(deps.redis, deps.loginThrottle));
  // Requests a minute of keys and users, and users' management changes a minute: one counter.
  const rateLimit = new KeyRateLimit(deps.redis);
  const adminJobs = new AdminJobs({
    signIn, lane, cipher: deps.cipher, channels: deps.store.channels, addressPolicy: deps.addressPolicy, jobs: deps.jobs, timeoutMs: deps.requestTimeoutMs,
    changesPerMinute: deps.managementChangesPerMinute, rateLimit, database: deps.database, log: deps.log,
    // This gateway's own caches of keys and channels, before the answer: the next request it
    // reads sees the change (every gateway's hear it from the change feed).
    changed: () => app.changeFeed?.heardHere({ kind: 'everything' }),
  });
  const management = { adminJobs, bodyLimitBytes: deps.managementBodyLimitBytes };
  const batches = new BatchOverview(deps.database, deps.store.users);
  const logDatabase = deps.logDatabase ?? deps.database;
  app.register(managementApi, { ...management, users: deps.store.users, batches, database: logDatabase, prefix: '/api' });

  // Model routes: one API-key cache for both wire formats and one copy of the channel table
  // (for the model lists), both kept fresh by the store's change feed; admission reads the
  // queues' backlog. The feed and the backlog sampler are decorators that start and stop with
  // the app.
  app.register(changeFeed, { redis: deps.redis });
  app.register(queueBacklog, {
    redis: deps.redis, queues: [QueueName.completion, QueueName.audio], shards: deps.jobs.shards, maxWaitMs: deps.requestTimeoutMs, maxBacklog: deps.maxBacklog,
  });
  app.register(async (models) => {
    // The user's share of BODY_BUDGET_PER_USER_BYTES, counted with every gateway's and batch worker's.
    const userBodies = new UserBodyBudget(deps.redis, `gateway-${randomUUID()}`, { leaseTtlMs: deps.bodyBudget.userLeaseTtlMs });
    models.addHook('onClose', () => userBodies.close());
    // Prices, for the cost a request holds on a budget in money, kept fresh by the change feed.
    const prices = new PriceBook(deps.redis, { feed: models.changeFeed });
    models.addHook('onReady', async () => {
      await prices.start();
    });
    models.addHook('onClose', () => prices.close());
    const modelApi = {
      jobs: deps.jobs,
      apiKeys: new ApiKeyAuth({ tokens: deps.store.tokens, users: deps.store.users, feed: models.changeFeed }),
      admission: new ModelAdmission({
        rateLimit, backlog: models.queueBacklog, holds: new QuotaHolds(deps.redis), prices, fairShares: new FairShares(deps.redis),
      }),
      catalog: new ModelCatalog(deps.store.channels, models.changeFeed),
      turns: new FairTurns(),
      intake: deps.intakePerUser ? new IntakeWindow(deps.intakePerUser) : undefined,
      timeoutMs: deps.requestTimeoutMs,
      bodyLimitBytes: deps.bodyLimitBytes,
      responseBufferBytes: deps.responseBufferBytes,
      bodyBudget: new BodyBudget(deps.bodyBudget, userBodies),
      requestLog: deps.requestLog,
      refusals: deps.refusals,
    };
    const batch = { database: deps.database, uploadDatabase: deps.uploadDatabase, downloadDatabase: deps.downloadDatabase, files: deps.files, completionWindowMs: deps.batchCompletionWindowMs, userMaxOpenBatches: deps.batchUserMaxOpen, users: deps.store.users };
    await models.register(openaiApi, { ...modelApi, batch, responses: { database: deps.database, retentionDays: deps.responseRetentionDays ?? 30 }, prefix: '/v1' });
    await models.register(geminiApi, { ...modelApi, version: 'v1beta', prefix: '/v1beta' });
    await models.register(geminiApi, { ...modelApi, version: 'v1', prefix: '/v1' });
    await models.register(anthropicApi, { ...modelApi, prefix: '/v1' });
  });
  app.register(dashboardRoutes, { ...management, jobs: deps.jobs, prefix: DASHBOARD_PATH, store: deps.store, payloads: deps.dashboardPayloads, batches });
  app.register(consoleRoutes, { ...management, prefix: ADMIN_PATH, store: deps.store, operations, batches, database: logDatabase });

  return {
    app,
    beginShutdown() {
      // Requests already read and waiting for their turn are begun as they came, before the close.
      requestTurns.startAll();
      stopping = true;
      // Connections that fall idle after the close began would otherwise hold it open.
      const sweep = setInterval(() => app.server.closeIdleConnections(), 100);
      sweep.unref();
    },
    drain: (deadline) => inFlight.drain(deadline),
  };
}

/** proxy-addr's trust for `hops` proxies in front, whatever their addresses: hop 0 is the socket's peer. */
const trustedHops = (hops: number) => (_address: string, hop: number) => hop < hops;
