/** Every store key, in one place. */
export const keys = {
  user: (id: number | string) => `gw:user:${id}`,
  userPrefix: 'gw:user:',
  userSeq: 'gw:seq:user',
  users: 'gw:users',
  usernameIndex: 'gw:idx:username',
  accessTokenIndex: 'gw:idx:access-token',

  channel: (id: number | string) => `gw:channel:${id}`,
  channelPrefix: 'gw:channel:',
  channelSeq: 'gw:seq:channel',
  channels: 'gw:channels',
  channelTagIndex: (tag: string) => `gw:idx:channel-tag:${tag}`,

  token: (id: number | string) => `gw:token:${id}`,
  tokenPrefix: 'gw:token:',
  tokenSeq: 'gw:seq:token',
  tokens: 'gw:tokens',
  tokenKeyIndex: 'gw:idx:token-key',
  userTokens: (userId: number | string) => `gw:idx:user-tokens:${userId}`,

  /** Pub/sub channel on which writers announce changes that caches must drop. */
  invalidations: 'gw:invalidate',
} as const;
