/**
 * The store's keys share one hash tag (`{store}`), so a record and its indexes are one Redis
 * Cluster slot and are written together atomically. On one Redis server the tag is only part
 * of the name.
 */
export const STORE_PREFIX = 'gw:{store}:';

/** Every store key, in one place. */
export const keys = {
  user: (id: number | string) => `gw:{store}:user:${id}`,
  userPrefix: 'gw:{store}:user:',
  userSeq: 'gw:{store}:seq:user',
  users: 'gw:{store}:users',
  usernameIndex: 'gw:{store}:idx:username',
  accessTokenIndex: 'gw:{store}:idx:access-token',

  channel: (id: number | string) => `gw:{store}:channel:${id}`,
  channelPrefix: 'gw:{store}:channel:',
  channelSeq: 'gw:{store}:seq:channel',
  channels: 'gw:{store}:channels',
  channelTagIndex: (tag: string) => `gw:{store}:idx:channel-tag:${tag}`,

  token: (id: number | string) => `gw:{store}:token:${id}`,
  tokenPrefix: 'gw:{store}:token:',
  tokenSeq: 'gw:{store}:seq:token',
  tokens: 'gw:{store}:tokens',
  tokenKeyIndex: 'gw:{store}:idx:token-key',
  userTokens: (userId: number | string) => `gw:{store}:idx:user-tokens:${userId}`,

  /** Pub/sub channel on which writers announce changes that caches must drop. */
  invalidations: 'gw:invalidate',
} as const;
