/**
 * Bodies and queries of the management API. The ingress validates with these and the admin
 * worker parses its job payload with the same schemas.
 */
import { z } from 'zod';
import { username } from './username.ts';
import { CHANNEL_TYPES } from './records.ts';
import { INT4_MAX } from '../validation.ts';
import { BATCH_STATUSES, type BatchStatus } from '../wire/openai-batch.ts';
import { modelPrice } from '../money/prices.ts';
import { budgetPeriod } from '../money/budget-period.ts';

const id = z.coerce.number().int().positive();
const nonNegative = z.number().int().min(0);

/** An array of names, or new-api's comma-separated string. */
const nameList = z.union([
  z.array(z.string().trim().min(1)),
  z.string().transform((s) => s.split(',').map((m) => m.trim()).filter(Boolean)),
]);

/**
 * The models a key or a user is limited to: a name list bounded in count and in size, since
 * every key a user makes is kept in Redis (see MAX_MODEL_LIST_*: a user's keys cannot grow the
 * store by more than their count times this).
 */
export const MAX_MODEL_LIST_ENTRIES = 64;
/**
 * Counted as the list is stored (its JSON, in UTF-8 bytes), not in characters: 4,096 characters
 * of `€` were 12 KB in Redis, and of control characters (stored escaped, six bytes each) 24 KB.
 */
export const MAX_MODEL_LIST_BYTES = 4096;
const modelList = nameList.refine(
  (names) => names.length <= MAX_MODEL_LIST_ENTRIES && Buffer.byteLength(JSON.stringify(names), 'utf8') <= MAX_MODEL_LIST_BYTES,
  `must name at most ${MAX_MODEL_LIST_ENTRIES} models, ${MAX_MODEL_LIST_BYTES} bytes in all as stored (JSON, UTF-8)`,
);

/** Text that is valid Unicode (no lone UTF-16 surrogate), for what is parsed from a JSON string. */
const wellFormed = z.string().refine((s) => s.isWellFormed(), 'must be valid Unicode text');
const mappingRecord = z.record(wellFormed, wellFormed);

/** A model mapping object, or the JSON string new-api stores. */
const modelMapping = z.union([
  mappingRecord,
  z.string().transform((s, ctx) => {
    if (s.trim() === '') return {};
    try {
      const value: unknown = JSON.parse(s);
      const parsed = mappingRecord.safeParse(value);
      if (parsed.success) return parsed.data;
    } catch {
      /* reported below */
    }
    ctx.addIssue({ code: 'custom', message: 'must be an object of model names, or its JSON string' });
    return z.NEVER;
  }),
]);

const role = z.union([z.literal(1), z.literal(10), z.literal(100)]);

const password = z.string().min(8, 'must be 8 to 64 characters').max(64, 'must be 8 to 64 characters');
const group = z.string().trim().min(1).max(64);

export const loginBody = z.strictObject({ username: z.string().min(1).max(64), password: z.string().min(1).max(1024) });
export const sessionBody = z.strictObject({ session: z.string().min(1) });
/** A SHA-256 digest made by the gateway: the secret itself (token, key, session) never leaves it. */
const digest = z.string().regex(/^[0-9a-f]{64}$/, 'must be a SHA-256 digest made by the gateway');
const userId = z.number().int().positive();
/**
 * The gateway checked the password itself and made the new access token: the job only says whom
 * to sign in and the token's digest; the token goes from the gateway to the client alone.
 */
const epoch = z.number().int().min(0);
/** `session_epoch`: the user's credentials as checked; a password changed meanwhile refuses the sign-in. */
export const loginJob = z.strictObject({ user_id: userId, session_epoch: epoch, access_token_hash: digest });
/** The same for a dashboard session: its digest, never the cookie's value. */
export const sessionJob = z.strictObject({ user_id: userId, session_epoch: epoch, session_hash: digest });
export const sessionDeleteJob = z.strictObject({ session_hash: digest });
/** A password hash made by the gateway (scrypt), never a password. */
const passwordHash = z.string().startsWith('scrypt$', 'must be hashed by the gateway');


/** A budget in money on a key or a user (records.ts `Budget`): US dollars, and its period. */
const budgetSettings = {
  // 0 (none), or at least a nano-dollar: a smaller one would be stored as none.
  max_budget: z.number().min(0).max(1_000_000_000).refine((usd) => usd === 0 || usd >= 1e-9, 'must be 0 (no budget) or at least 0.000000001').optional(),
  budget_duration: z.preprocess((value) => budgetPeriodAliases[String(value)] ?? value, budgetPeriod).optional(),
};
/** LiteLLM's spellings of a period, as its users write them. */
const budgetPeriodAliases: Record<string, string> = { '': 'none', '1d': 'daily', '24h': 'daily', '7d': 'weekly', '1w': 'weekly', '30d': 'monthly', '1mo': 'monthly' };

/**
 * Limits an administrator sets on a user. They bind every key of the user, whatever the key
 * says: the key's own settings can only narrow them further.
 */
const userLimits = {
  /** Requests a minute across all the user's keys; 0: none. */
  rpm_limit: nonNegative.optional(),
  /** Models the user's keys may use; empty: all. */
  models: modelList.optional(),
  /** batch: every request of the user's keys waits behind interactive work. */
  priority: z.enum(['interactive', 'batch']).optional(),
  /** API keys the user may hold at once. */
  max_keys: z.number().int().min(0).max(10_000).optional(),
  /** Requests of the user's keys in flight at once; 0: none. */
  max_in_flight: nonNegative.optional(),
  ...budgetSettings,
};

const newUser = {
  username,
  display_name: z.string().max(64).optional(),
  role: role.optional(),
  quota: nonNegative.optional(),
  group: group.optional(),
  ...userLimits,
};
export const createUserBody = z.strictObject({ ...newUser, password });
/** `id_above`: the highest user id PostgreSQL still has rows of (the gateway reads it): the new user's id is above it. */
export const createUserJob = z.strictObject({ ...newUser, password_hash: passwordHash, id_above: z.number().int().nonnegative().optional() });

const userChanges = {
  id,
  username: username.optional(),
  display_name: z.string().max(64).optional(),
  role: role.optional(),
  status: z.union([z.literal(1), z.literal(2)]).optional(),
  quota: nonNegative.optional(),
  group: group.optional(),
  ...userLimits,
};
export const updateUserBody = z.strictObject({ ...userChanges, password: password.optional() });
export const updateUserJob = z.strictObject({ ...userChanges, password_hash: passwordHash.optional() });

/** A base URL is scheme, host, port and path: a query, a fragment or credentials in it would be mangled or leaked. */
const baseUrl = z.url({ protocol: /^https?$/ })
  .refine((u) => !/[?#]/.test(u), 'must not have a query (?…) or a fragment (#…)')
  .refine((u) => { const url = new URL(u); return !url.username && !url.password; }, 'must not hold a user name or password: put the key in "key"')
  .transform((u) => u.replace(/\/+$/, ''));

/** The gateway encrypts a channel key before it enqueues it: a job never holds one in clear. */
const encryptedKey = z.string().startsWith('enc:v1:', 'must be encrypted by the gateway');
const keyMask = z.string().max(64);

const channelFields = {
  name: z.string().trim().min(1).max(128),
  type: z.enum(CHANNEL_TYPES),
  key: z.string().min(1).max(4096).regex(/^[^\p{Cc}]*$/u, 'must not hold control characters (CR, LF, tab, …)'),
  base_url: baseUrl,
  models: nameList.refine((m) => m.length > 0, 'must name at least one model'),
  group: z.union([z.array(group), z.string()]).transform((g) =>
    (Array.isArray(g) ? g : g.split(',')).map((s) => s.trim()).filter(Boolean).join(','),
  ),
  tag: z.string().max(64),
  priority: z.number().int(),
  weight: z.number().int().min(0),
  model_mapping: modelMapping,
  responses_api: z.boolean(),
  /** What a prompt token read from (or written to) the provider's prompt cache counts for, against 1 for any other. */
  cache_read_ratio: z.number().min(0).max(100),
  cache_write_ratio: z.number().min(0).max(100),
  max_concurrency: nonNegative,
  timeout_ms: z.number().int().min(0).max(3_600_000),
  status: z.union([z.literal(1), z.literal(2), z.literal(3)]),
};

const channelOptional = {
  group: channelFields.group.optional(),
  tag: channelFields.tag.optional(),
  priority: channelFields.priority.optional(),
  weight: channelFields.weight.optional(),
  model_mapping: channelFields.model_mapping.optional(),
  responses_api: channelFields.responses_api.optional(),
  cache_read_ratio: channelFields.cache_read_ratio.optional(),
  cache_write_ratio: channelFields.cache_write_ratio.optional(),
  max_concurrency: channelFields.max_concurrency.optional(),
  timeout_ms: channelFields.timeout_ms.optional(),
  status: channelFields.status.optional(),
};
const channelRequired = { name: channelFields.name, type: channelFields.type, base_url: channelFields.base_url, models: channelFields.models };
const channelChanges = {
  id,
  name: channelFields.name.optional(),
  type: channelFields.type.optional(),
  base_url: channelFields.base_url.optional(),
  models: channelFields.models.optional(),
  ...channelOptional,
};
/** A channel's key goes only where the admin who set it sent it: moving the channel needs the key again. */
const keyWithMove = (changes: { key?: unknown; base_url?: unknown; type?: unknown }) => changes.key !== undefined || (changes.base_url === undefined && changes.type === undefined);
const keyWithMoveIssue = { message: 'changing base_url or type needs the key in the same request', path: ['key'] };

/** Only an OpenAI-style upstream serves the Responses API as OpenAI does. */
const responsesApiOnOpenai = (channel: { type: string; responses_api?: boolean }) => channel.responses_api !== true || channel.type === 'openai';
const responsesApiIssue = { message: 'responses_api is for an openai channel whose upstream serves /v1/responses', path: ['responses_api'] };

export const createChannelBody = z.strictObject({ ...channelRequired, key: channelFields.key, ...channelOptional }).refine(responsesApiOnOpenai, responsesApiIssue);
export const updateChannelBody = z.strictObject({ ...channelChanges, key: channelFields.key.optional() }).refine(keyWithMove, keyWithMoveIssue);
/** What the admin queue carries: the key encrypted, and its mask. */
export const createChannelJob = z.strictObject({ ...channelRequired, key: encryptedKey, key_mask: keyMask, ...channelOptional }).refine(responsesApiOnOpenai, responsesApiIssue);
export const updateChannelJob = z.strictObject({ ...channelChanges, key: encryptedKey.optional(), key_mask: keyMask.optional() }).refine(keyWithMove, keyWithMoveIssue);

export const tagBody = z.strictObject({ tag: z.string().min(1).max(64) });

const expiredTime = z.number().int().refine((t) => t === -1 || t > 0, 'must be -1 (never) or a unix time in seconds');

/** What a key's owner or an administrator may set on a key, at creation or later. */
const tokenSettings = {
  remain_quota: nonNegative.optional(),
  unlimited_quota: z.boolean().optional(),
  expired_time: expiredTime.optional(),
  models: modelList.optional(),
  rpm_limit: nonNegative.optional(),
  priority: z.enum(['interactive', 'batch']).optional(),
  /** Requests of this key in flight at once; 0: none (the user's cap still applies). */
  max_in_flight: nonNegative.optional(),
  ...budgetSettings,
};

export const createTokenBody = z.strictObject({
  name: z.string().trim().min(1).max(64),
  user_id: z.number().int().positive().optional(),
  ...tokenSettings,
});

/** The gateway made the key: the job carries its digest and preview, never the key. */
export const createTokenJob = createTokenBody.extend({ key_hash: digest, key_preview: z.string().max(64) });

export const updateTokenBody = z.strictObject({
  id,
  name: z.string().trim().min(1).max(64).optional(),
  status: z.union([z.literal(1), z.literal(2)]).optional(),
  ...tokenSettings,
});

const pageQuery = {
  // Bounded: a page past the millionth is no page (and an OFFSET past bigint a 500).
  p: z.coerce.number().int().min(1).max(1_000_000).default(1),
  page_size: z.coerce.number().int().min(1).max(100).default(10),
};
export const listUsersQuery = z.strictObject({ ...pageQuery, keyword: z.string().optional() });
export const listChannelsQuery = z.strictObject({
  ...pageQuery,
  tag: z.string().optional(),
  status: z.coerce.number().int().min(1).max(3).optional(),
});
export const listTokensQuery = z.strictObject({ ...pageQuery, user_id: z.coerce.number().int().positive().optional() });
export const idParam = z.strictObject({ id });

/** One status, or several separated by commas (`in_progress,finalizing`). */
const batchStatuses = z.string().transform((value, ctx) => {
  const statuses = value.split(',').map((s) => s.trim()).filter(Boolean);
  const unknown = statuses.filter((s) => !(BATCH_STATUSES as readonly string[]).includes(s));
  if (statuses.length === 0 || unknown.length > 0) {
    ctx.addIssue({ code: 'custom', message: `must be one or more of ${BATCH_STATUSES.join(', ')}, separated by commas` });
    return z.NEVER;
  }
  return statuses as BatchStatus[];
});
/** Every user's batches, for administrators: newest first, by owner and status. */
export const listBatchesQuery = z.strictObject({ ...pageQuery, user_id: z.coerce.number().int().positive().optional(), status: batchStatuses.optional() });
/**
 * Filters of the request log (`GET /api/log/`, `/api/log/self`, `/api/log/stat`): a time range
 * in epoch seconds (new-api's `start_timestamp` / `end_timestamp`), and exact matches.
 */
const LAST_SECOND = 253_402_300_799; // 9999-12-31T23:59:59Z: PostgreSQL's timestamps end near it
const logFilters = {
  start_timestamp: z.coerce.number().int().min(0).max(LAST_SECOND).optional(),
  end_timestamp: z.coerce.number().int().min(0).max(LAST_SECOND).optional(),
  user_id: z.coerce.number().int().positive().max(INT4_MAX).optional(),
  token_id: z.coerce.number().int().positive().max(INT4_MAX).optional(),
  model_name: z.string().min(1).max(256).optional(),
  channel: z.coerce.number().int().positive().max(INT4_MAX).optional(),
  status: z.coerce.number().int().min(100).max(599).optional(),
  /** Only requests that failed (status 400 and above), or only those that did not. */
  failed: z.enum(['true', 'false']).transform((v) => v === 'true').optional(),
  request_id: z.string().min(1).max(128).optional(),
  batch_id: z.string().min(1).max(128).optional(),
  /** A trace's id (32 hex digits), as a tracing system shows it: its request's row. */
  trace_id: z.string().regex(/^[0-9a-f]{32}$/).optional(),
};
export const listLogsQuery = z.strictObject({ ...pageQuery, ...logFilters });
export const logStatQuery = z.strictObject({
  ...logFilters,
  /** Sums per value of this column, or one sum over every row. */
  group_by: z.enum(['model', 'channel', 'user', 'token', 'route', 'status']).optional(),
  /** Sums per minute, hour or day (UTC), or one sum over the range. */
  interval: z.enum(['minute', 'hour', 'day']).optional(),
});
export type ListLogsQuery = z.infer<typeof listLogsQuery>;
export type LogStatQuery = z.infer<typeof logStatQuery>;
/** A batch's id (OpenAI's `batch_…`). */
export const batchIdParam = z.strictObject({ id: z.string().min(1).max(128) });

export type LoginBody = z.infer<typeof loginBody>;
export type LoginJob = z.infer<typeof loginJob>;
export type CreateUserBody = z.infer<typeof createUserBody>;
export type UpdateUserBody = z.infer<typeof updateUserBody>;
export type CreateChannelBody = z.infer<typeof createChannelBody>;
export type UpdateChannelBody = z.infer<typeof updateChannelBody>;
export type CreateTokenBody = z.infer<typeof createTokenBody>;
export type UpdateTokenBody = z.infer<typeof updateTokenBody>;
export type ListUsersQuery = z.infer<typeof listUsersQuery>;
export type ListChannelsQuery = z.infer<typeof listChannelsQuery>;
export type ListTokensQuery = z.infer<typeof listTokensQuery>;
export type ListBatchesQuery = z.infer<typeof listBatchesQuery>;

/** A model's name as prices name it: what a client asks for. */
const pricedModel = z.string().trim().min(1).max(128).regex(/^[^\p{Cc}]+$/u, 'must not hold control characters');
/** `channel_id`: the price of the model on that channel alone, over the model's own. */
export const setPriceBody = modelPrice.extend({ model: pricedModel, channel_id: z.number().int().positive().optional() }).strict();
export const priceQuery = z.strictObject({ model: pricedModel, channel_id: z.coerce.number().int().positive().optional() });
export const listPricesQuery = z.strictObject({ model: z.string().max(128).optional() });

/**
 * new-api's `PUT /api/option/`: `{ key, value }`, the value a JSON object of ratios as a string
 * (as new-api's console sends it) or as the object itself. Only the ratio options are taken.
 */
const ratioMap = z.record(z.string().min(1).max(128), z.number().min(0).max(1_000_000))
  .refine((map) => Object.keys(map).length <= 10_000, 'must have at most 10000 entries');
export const setOptionBody = z.strictObject({
  key: z.enum(['ModelRatio', 'CompletionRatio', 'CacheRatio', 'CreateCacheRatio', 'GroupRatio'], {
    error: 'this gateway takes the ratio options only: ModelRatio, CompletionRatio, CacheRatio, CreateCacheRatio, GroupRatio',
  }),
  value: z.union([
    z.string().max(1_000_000).transform((text, context) => {
      try {
        return JSON.parse(text) as unknown;
      } catch {
        context.addIssue({ code: 'custom', message: 'must be a JSON object of ratios' });
        return z.NEVER;
      }
    }).pipe(ratioMap),
    ratioMap,
  ]),
});
