/**
 * The store's keys share one hash tag (`{store}`), so a record and its indexes are one Redis
 * Cluster slot and are written together atomically. On one Redis server the tag is only part
 * of the name.
 */
export const STORE_PREFIX = 'gw:{store}:';

/** Every store key, in one place. */
export const keys = {
  user: (id: number | string) => `${STORE_PREFIX}user:${id}`,
  userPrefix: `${STORE_PREFIX}user:`,
  userSeq: `${STORE_PREFIX}seq:user`,
  users: `${STORE_PREFIX}users`,
  usernameIndex: `${STORE_PREFIX}idx:username`,
  /** Each user's name's confusable skeletons (UTS #39), so no new name looks like another. */
  usernameSkeletonIndex: `${STORE_PREFIX}idx:username-skeleton`,
  accessTokenIndex: `${STORE_PREFIX}idx:access-token`,

  channel: (id: number | string) => `${STORE_PREFIX}channel:${id}`,
  channelPrefix: `${STORE_PREFIX}channel:`,
  channelSeq: `${STORE_PREFIX}seq:channel`,
  channels: `${STORE_PREFIX}channels`,
  channelTagIndex: (tag: string) => `${STORE_PREFIX}idx:channel-tag:${tag}`,

  token: (id: number | string) => `${STORE_PREFIX}token:${id}`,
  tokenPrefix: `${STORE_PREFIX}token:`,
  tokenSeq: `${STORE_PREFIX}seq:token`,
  tokens: `${STORE_PREFIX}tokens`,
  tokenKeyIndex: `${STORE_PREFIX}idx:token-key`,
  userTokens: (userId: number | string) => `${STORE_PREFIX}idx:user-tokens:${userId}`,

  /** The record id a management job wrote, kept while the job could still run again (record-write.ts). */
  appliedJob: (jobId: string) => `${STORE_PREFIX}applied:${jobId}`,
  /**
   * Holds of the requests in flight on a key's or a user's quota (quota-holds.ts): a sorted set
   * of `<id>:<amount>` scored by expiry, and the sum of their amounts.
   */
  holds: (of: 'token' | 'user', id: number | string) => `${STORE_PREFIX}holds:${of}:${id}`,
  heldSum: (of: 'token' | 'user', id: number | string) => `${STORE_PREFIX}held-sum:${of}:${id}`,
  /** The sum of the same holds' worst-case costs, in nano-dollars, on a budget in money. */
  heldCost: (of: 'token' | 'user', id: number | string) => `${STORE_PREFIX}held-cost:${of}:${id}`,

  /** Prices administrators set (price-store.ts): model → its price as JSON. */
  prices: `${STORE_PREFIX}prices`,
  /** Channels' own prices: `<channel id>:<model>` → its price as JSON. */
  channelPrices: `${STORE_PREFIX}channel-prices`,
  /** new-api's ratio options as set (`ModelRatio`, `GroupRatio`, …), each a JSON object. */
  priceOptions: `${STORE_PREFIX}price-options`,

  /** Pub/sub channel on which writers announce changes that caches must drop. */
  invalidations: 'gw:invalidate',
} as const;
