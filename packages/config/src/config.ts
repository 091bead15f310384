import { isIP } from 'node:net';
import { z } from 'zod';

const integer = (fallback: number, min = 0, max = Number.MAX_SAFE_INTEGER) =>
  z.coerce.number().int().min(min).max(max).default(fallback);

const redisUrl = z
  .string()
  .regex(/^rediss?:\/\//, 'must start with redis:// or rediss://')
  .optional();

/** `host:port,host:port,…`: the seed nodes of a Redis Cluster. */
const clusterNodes = z
  .string()
  .transform((value, ctx) => {
    const seeds = value.split(',').map((s) => s.trim()).filter(Boolean).map((entry) => {
      const match = /^(.+):(\d{1,5})$/.exec(entry);
      return match ? { host: match[1]!.replace(/^\[|\]$/g, ''), port: Number(match[2]) } : undefined;
    });
    if (seeds.length === 0 || seeds.some((s) => !s || s.port < 1 || s.port > 65535)) {
      ctx.addIssue({ code: 'custom', message: 'must be host:port pairs separated by commas (10.0.0.1:6379,10.0.0.2:6379)' });
      return z.NEVER;
    }
    return seeds as { host: string; port: number }[];
  })
  .optional();

/** 32 bytes, given as base64 (44 characters) or hex (64). */
const secretKey = z.string().transform((value, ctx) => {
  const bytes = /^[0-9a-f]{64}$/i.test(value) ? Buffer.from(value, 'hex') : Buffer.from(value, 'base64');
  if (bytes.length !== 32) {
    ctx.addIssue({ code: 'custom', message: 'must be 32 random bytes, as base64 or 64 hex characters (openssl rand -base64 32)' });
    return z.NEVER;
  }
  return bytes;
});

/**
 * TRUST_PROXY: whom the gateway believes about the client (X-Forwarded-For) and the scheme
 * (X-Forwarded-Proto). `false` (default): nobody, the socket's peer is the client. `true`: the
 * one proxy in front, whatever its address (only when nothing but that proxy can reach the
 * gateway): the client is the last address of X-Forwarded-For, the one the proxy wrote, never
 * one the client wrote before it (Fastify's `true` would take the first, so a client behind an
 * appending proxy such as nginx's `$proxy_add_x_forwarded_for` or AWS's ALB chose its own
 * address). Otherwise the proxies' addresses or CIDR ranges, comma-separated (or proxy-addr's
 * names: loopback, linklocal, uniquelocal), for a chain of proxies.
 */
const trustProxy = z.string().transform((value, ctx): boolean | string => {
  const text = value.trim();
  if (text === 'false') return false;
  if (text === 'true') return true;
  const entries = text.split(',').map((e) => e.trim()).filter(Boolean);
  const valid = (e: string) => ['loopback', 'linklocal', 'uniquelocal'].includes(e) || (isIP(e.split('/')[0]!) > 0 && /^[^/]+(\/\d{1,3})?$/.test(e));
  if (entries.length === 0 || !entries.every(valid)) {
    ctx.addIssue({ code: 'custom', message: 'must be false, true, or proxy addresses/CIDRs separated by commas (10.0.0.0/8,127.0.0.1)' });
    return z.NEVER;
  }
  return entries.join(',');
});

/** Every environment variable, with its default. docs/operations.md, "Configuration", lists the same set. */
export const configSchema = z.object({
  REDIS_URL: redisUrl,
  /** Seed nodes of a Redis Cluster; takes precedence over REDIS_URL. */
  REDIS_CLUSTER_NODES: clusterNodes,
  /** Password (AUTH) for the cluster's nodes; a REDIS_URL carries its own. */
  REDIS_PASSWORD: z.string().min(1).optional(),
  REDIS_TLS: z.enum(['true', 'false']).default('false').transform((v) => v === 'true'),
  /**
   * On a Redis Cluster, how long a command waits out a failover (its master unreachable, or the
   * cluster answering CLUSTERDOWN or TRYAGAIN) before it fails; a request never waits past its
   * own deadline. Longer than the cluster's failover (cluster-node-timeout plus a few seconds).
   */
  REDIS_FAILOVER_WAIT_MS: integer(30_000, 0, 600_000),
  PORT: integer(3000, 0, 65535),
  HOST: z.string().min(1).default('127.0.0.1'),
  ADMIN_TOKEN: z.string().min(16, 'must be at least 16 characters').optional(),
  ADMIN_PASSWORD: z.string().min(8, 'must be at least 8 characters').max(64).optional(),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** Unset: pretty on a terminal, JSON otherwise. */
  LOG_FORMAT: z.enum(['pretty', 'json']).optional(),
  COMPLETION_CONCURRENCY: integer(256, 1, 10_000),
  AUDIO_CONCURRENCY: integer(16, 1, 10_000),
  ADMIN_CONCURRENCY: integer(16, 1, 10_000),
  /** Jobs one BullMQ Worker ("lane") of a worker process runs at once; its concurrency is split into lanes of this size. */
  QUEUE_LANE_CONCURRENCY: integer(256, 1, 10_000),
  /** Jobs waiting for a full or resting channel a worker holds, beyond its concurrency, per job of it (they hold no slot). */
  QUEUE_WAITING_PER_SLOT: integer(1, 0, 64),
  /** BullMQ queues the completion and audio queues are each split into (a Redis Cluster spreads them over its masters). */
  QUEUE_SHARDS: integer(1, 1, 64),
  /** One model job in this many stays on the queue board once completed (0: none); management jobs and failed jobs are all kept. */
  QUEUE_BOARD_KEEP_ONE_IN: integer(10, 0, 1_000_000),
  /** Replies and stream chunks for one gateway within this many ms share one reply-stream entry (0: one event-loop turn). */
  REPLY_COALESCE_MS: integer(0, 0, 100),
  REQUEST_TIMEOUT_MS: integer(120_000, 100, 3_600_000),
  BODY_LIMIT_BYTES: integer(10 * 1024 * 1024, 1024, 1024 * 1024 * 1024),
  /**
   * Bytes of model request bodies one API key, and the whole gateway, may have in flight
   * (received, queued or running); past them 429 and 503 with Retry-After. A key with nothing in
   * flight may always send one body up to BODY_LIMIT_BYTES; a chunked body counts as
   * BODY_LIMIT_BYTES until it ends.
   */
  BODY_BUDGET_PER_KEY_BYTES: integer(32 * 1024 * 1024, 1024, 64 * 1024 * 1024 * 1024),
  BODY_BUDGET_PER_USER_BYTES: integer(64 * 1024 * 1024, 1024, 64 * 1024 * 1024 * 1024),
  /**
   * How long a gateway's or batch worker's lease on a slice of a user's body budget counts in
   * Redis unless renewed (each process renews its leases every third of it): how long a killed
   * process's bodies keep counting against its users.
   */
  BODY_LEASE_TTL_MS: integer(30_000, 3_000, 600_000),
  INTAKE_PER_USER: integer(8, 0, 100_000),
  BODY_BUDGET_BYTES: integer(256 * 1024 * 1024, 1024, 64 * 1024 * 1024 * 1024),
  /**
   * Bodies of requests answered before they were read (refused from their headers) are read and
   * dropped at most this fast, all together, so a flood of refused bodies cannot take the CPU.
   */
  UNREAD_BODY_BYTES_PER_SECOND: integer(64 * 1024 * 1024, 64 * 1024, 64 * 1024 * 1024 * 1024),
  METRICS_PORT: integer(0, 0, 65535),
  CHANNEL_FAILURES_BEFORE_COOLDOWN: integer(3, 1, 1000),
  CHANNEL_COOLDOWN_MS: integer(30_000, 0, 3_600_000),
  CHANNEL_AUTH_FAILURES_BEFORE_DISABLE: integer(3, 1, 1000),
  CHANNEL_LEASE_TTL_MS: integer(15_000, 1000, 3_600_000),
  /** How long the channel of a conversation's last turn is remembered (0: conversations are not kept on a channel). */
  STICKY_TTL_MS: integer(3_600_000, 0, 7 * 86_400_000),
  /** The same for a request that holds only a conversation's opening (perhaps a one-off). */
  STICKY_OPENING_TTL_MS: integer(300_000, 0, 7 * 86_400_000),
  /** Usage is charged in batches this often (0: each answer at once); a crash loses at most this long of it. */
  USAGE_FLUSH_MS: integer(100, 0, 60_000),
  /** A key's quota, once read, answers the checks of its next requests for this long (0: read it every time). */
  QUOTA_CACHE_MS: integer(250, 0, 60_000),
  ADMISSION_MAX_BACKLOG: integer(100_000, 1, 100_000_000),
  SHUTDOWN_TIMEOUT_MS: integer(10_000, 0, 600_000),
  REDIS_DATA_DIR: z.string().min(1).default('.data/redis'),
  /** Management, login and dashboard bodies are small; only model requests may be large. */
  MANAGEMENT_BODY_LIMIT_BYTES: integer(64 * 1024, 1024, 16 * 1024 * 1024),
  /**
   * Changes (creates, updates, deletes) a common user may make through the management API in a
   * minute, together: a create or a delete leaves a record of its job in Redis for its deadline
   * and ten minutes more (so a job run again after its worker died writes once), which is what
   * this bounds. Reads and administrators are not counted.
   */
  MANAGEMENT_CHANGES_PER_MINUTE: integer(60, 1, 1_000_000),
  /** A client must send its request headers within this time, and the whole request within BODY_TIMEOUT_MS. */
  HEADERS_TIMEOUT_MS: integer(10_000, 1000, 600_000),
  BODY_TIMEOUT_MS: integer(30_000, 1000, 3_600_000),
  /**
   * A connection with no request in progress is closed after this long. Behind a load balancer,
   * keep it above the balancer's own idle time-out (60 s on AWS ALB), so the balancer closes first.
   */
  KEEP_ALIVE_TIMEOUT_MS: integer(72_000, 1000, 3_600_000),
  /** A client that takes no byte of its answer for this long is dropped (its job cancelled). */
  CLIENT_STALL_TIMEOUT_MS: integer(30_000, 1000, 3_600_000),
  /** Bytes of one answer (whole or streamed) the gateway buffers for a client that reads slowly. */
  RESPONSE_BUFFER_BYTES: integer(4 * 1024 * 1024, 16 * 1024, 1024 * 1024 * 1024),
  /**
   * Connections the kernel may hold accepted but not yet taken by the gateway (the listen
   * backlog); the kernel caps it at net.core.somaxconn. Sized so a burst of thousands of
   * connections at once waits in it instead of having its handshakes dropped.
   */
  LISTEN_BACKLOG: integer(8192, 1, 1_000_000),
  /** AES-256 key for channel keys at rest: 32 bytes as base64 or 64 hex characters. */
  SECRET_KEY: secretKey.optional(),
  /** The key before a rotation: still read, never written. */
  SECRET_KEY_PREVIOUS: secretKey.optional(),
  /** The largest upstream reply, and the largest one streamed event; past either, 502. */
  UPSTREAM_MAX_REPLY_BYTES: integer(64 * 1024 * 1024, 1024, 1024 * 1024 * 1024),
  UPSTREAM_MAX_EVENT_BYTES: integer(64 * 1024 * 1024, 1024, 1024 * 1024 * 1024),
  /** Channels may point at private and loopback addresses (self-hosted models). */
  CHANNEL_ALLOW_PRIVATE_ADDRESSES: z.enum(['true', 'false']).default('true').transform((v) => v === 'true'),
  /**
   * Failed logins, counted per window across gateways: for one name from one client address (an
   * IPv6 /64), before that address must wait for that name; from one address, whatever the
   * names; and for one existing user from all addresses, past which only addresses that have
   * failed for it must wait (so an attacker cannot lock a user out from elsewhere).
   */
  LOGIN_FAILURES_PER_USER: integer(5, 1, 1_000_000),
  LOGIN_FAILURES_PER_ADDRESS: integer(20, 1, 1_000_000),
  LOGIN_FAILURES_PER_USER_OVERALL: integer(100, 1, 1_000_000),
  LOGIN_WINDOW_SECONDS: integer(900, 1, 86_400),
  /** Password hashes (scrypt) one gateway computes at once; more wait their turn. */
  PASSWORD_HASH_CONCURRENCY: integer(2, 1, 64),
  /** How much of a job's payload (prompts, speech text) the dashboard shows. */
  DASHBOARD_PAYLOADS: z.enum(['truncated', 'full', 'none']).default('truncated'),
  /**
   * The PostgreSQL that keeps the Batch API's files, batches and results
   * (postgres://user:password@host:5432/db). Unset: `npm start` starts an embedded one, with its
   * data under POSTGRES_DATA_DIR (unset: `postgres` beside REDIS_DATA_DIR, so `.data/postgres`);
   * a gateway without one answers the Files and Batches routes 503.
   */
  DATABASE_URL: z.string().regex(/^postgres(ql)?:\/\//, 'must start with postgres:// or postgresql://').optional(),
  POSTGRES_DATA_DIR: z.string().min(1).optional(),
  /**
   * The request log (one PostgreSQL row per model request, written in batches off the reply
   * path): `on` wherever DATABASE_URL is set, or `off`.
   */
  REQUEST_LOG: z.enum(['on', 'off']).default('on'),
  /** Days of the request log kept; older days are dropped whole (0: kept for good). */
  LOG_RETENTION_DAYS: integer(30, 0, 3650),
  /**
   * Characters of each prompt and whole reply the request log keeps (0: none, the default).
   * Above 0 the log holds what users sent and got: see the README's privacy note.
   */
  LOG_CONTENT_CHARS: integer(0, 0, 1_000_000),
  /**
   * Reads of the request log (the log API, the console) run on a pool of their own, 3 connections
   * shared one read at a time per user and 1 for administrators; PostgreSQL cancels one that runs
   * longer than this, and a read waits for its turn at most this long.
   */
  LOG_QUERY_TIMEOUT_MS: integer(5000, 100, 600_000),
  /** Request log rows one process holds while PostgreSQL is away; past it rows are dropped and counted. */
  LOG_BUFFER_ROWS: integer(50_000, 100, 10_000_000),
  /**
   * A gateway's refusals on the model routes (bad key, model not allowed, invalid body, quota,
   * rate limits, overload) in the request log: the first of one credential (or address), status
   * and reason in each window of this many ms is a row, its repeats raise that row's count.
   */
  REFUSAL_LOG_WINDOW_MS: integer(60_000, 1000, 86_400_000),
  /** Refusal rows one gateway writes in a window at most; past it, one row per status and reason counts the rest. */
  REFUSAL_LOG_ROWS: integer(1000, 10, 1_000_000),
  /** Unknown keys from one address with a row of their own in a window; past it, one row per status and reason counts the rest. */
  REFUSAL_LOG_KEYS_PER_ADDRESS: integer(10, 1, 10_000),
  /** The largest batch input file (OpenAI's: 200 MB and 50,000 lines). */
  FILE_MAX_BYTES: integer(200 * 1024 * 1024, 1024, 1024 * 1024 * 1024),
  FILE_MAX_LINES: integer(50_000, 1, 1_000_000),
  /** Bytes of uploaded files one user may keep, all together: past it an upload is refused until files are deleted. */
  FILE_USER_MAX_BYTES: integer(1024 * 1024 * 1024, 1024, Number.MAX_SAFE_INTEGER),
  /** Uploaded files one user may keep (empty ones included). */
  FILE_USER_MAX_FILES: integer(1000, 1, 10_000_000),
  /**
   * Where a gateway keeps an upload's lines while its client sends them (the system's temporary
   * directory when empty), and the bytes all its uploads may hold there at once; past them an
   * upload is refused with 503 and `Retry-After`.
   */
  UPLOAD_SPOOL_DIR: z.string().default(''),
  UPLOAD_SPOOL_BYTES: integer(2 * 1024 * 1024 * 1024, 1024, Number.MAX_SAFE_INTEGER),
  /** Batches of one user not yet ended (validating, running, finalizing, cancelling); past it a new one is refused (429). */
  BATCH_USER_OPEN: integer(100, 1, 1_000_000),
  /** Days an ended batch is kept (its lines, results and result files), then dropped; 0 keeps them for good. */
  BATCH_RETENTION_DAYS: integer(30, 0, 36_500),
  /** Days a stored response of the Responses API (`store`, the default) is kept for GET and previous_response_id, then dropped. */
  RESPONSE_RETENTION_DAYS: integer(30, 1, 36_500),
  /** How long a batch's "24h" completion window really lasts (shorter for tests and trials). */
  BATCH_COMPLETION_WINDOW_MS: integer(24 * 3_600_000, 1000, 7 * 24 * 3_600_000),
  /** Lines of one batch in flight at once (queued or running): Redis holds at most this many of its jobs. */
  BATCH_WINDOW: integer(128, 1, 10_000),
  /** Batches one batch worker runs at once; the rest wait for it or another batch worker. */
  BATCH_WORKER_BATCHES: integer(32, 1, 1000),
  /**
   * Batches of one user run at once, across every batch worker; the user's others wait, and
   * other users' batches are taken first (BatchRuns.claim).
   */
  BATCH_USER_BATCHES: integer(4, 1, 1000),
  /** How long one line may wait and run before it is tried again (a line is tried BATCH_LINE_ATTEMPTS times). */
  BATCH_LINE_TIMEOUT_MS: integer(600_000, 1000, 24 * 3_600_000),
  BATCH_LINE_ATTEMPTS: integer(3, 1, 100),
  /**
   * A batch whose batch worker stops renewing its lease (killed, cut off) for this long is taken
   * over by another batch worker; it renews every third of it.
   */
  BATCH_LEASE_MS: integer(15_000, 1000, 3_600_000),
  /** Proxies whose X-Forwarded-For/-Proto the gateway believes (client address, https): see trustProxy. */
  TRUST_PROXY: trustProxy.default(false),
});

export type Config = z.infer<typeof configSchema>;

/** A start-up error that names the variable at fault. */
export class ConfigError extends Error {
  readonly variables: string[];
  constructor(issues: { variable: string; message: string }[]) {
    super(
      'invalid configuration: ' +
        issues.map((i) => `${i.variable}: ${i.message}`).join('; '),
    );
    this.name = 'ConfigError';
    this.variables = issues.map((i) => i.variable);
  }
}

/** Parses the environment once; empty strings count as unset. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const cleaned: Record<string, string> = {};
  for (const key of Object.keys(configSchema.shape)) {
    const value = env[key];
    if (value !== undefined && value !== '') cleaned[key] = value;
  }
  const parsed = configSchema.safeParse(cleaned);
  if (!parsed.success) {
    throw new ConfigError(
      parsed.error.issues.map((issue) => ({
        variable: String(issue.path[0] ?? '?'),
        message: issue.message,
      })),
    );
  }
  return parsed.data;
}
