/**
 * @gateway/store owns the records in Redis: users, channels and API keys (tokens), their
 * indexes (username, access token, key hash, channel tag), and the secrets' hashing. Every
 * write of a record and its indexes is one atomic Lua script.
 */
import type { RedisClient as Redis } from '@gateway/config';
import { ChannelStore } from './channel-store.ts';
import { SessionStore } from './session-store.ts';
import { TokenStore } from './token-store.ts';
import { UserStore } from './user-store.ts';
import { PriceStore } from './price-store.ts';

export { UserStore, publicUser, type StoredUser, type NewUser, type UserChanges } from './user-store.ts';
export { ChannelStore, publicChannel, type NewChannel, type ChannelChanges } from './channel-store.ts';
export { TokenStore, publicToken, type StoredToken, type NewToken, type TokenChanges } from './token-store.ts';
export { hashPassword, verifyPassword, sha256, maskSecret, issueApiKey, newAccessToken, sameDigest, type IssuedKey } from './secrets.ts';
export { keys, STORE_PREFIX } from './keys.ts';
export { writeOnce, type WriteOnce } from './record-write.ts';
import { alreadyWritten, type WriteOnce } from './record-write.ts';
export { migrateKeyLayout } from './key-layout.ts';
export { SessionStore } from './session-store.ts';
export { ChannelKeyCipher, isEncryptedKey } from './channel-key-cipher.ts';
export { QuotaHolds, type HoldSubject, type HoldRefusal, type SettledUsage } from './quota-holds.ts';
export { PriceBook, PriceStore, PriceTable, ratioOptions, type PriceEntry, type PriceSource, type RatioOption } from './price-store.ts';
export { InvalidationFeed } from './invalidation-feed.ts';
export { decodeChange, encodeChange, publishChange, touchesCallers, touchesChannels, touchesPrices, type Change } from './change-messages.ts';

export interface Store {
  users: UserStore;
  channels: ChannelStore;
  tokens: TokenStore;
  sessions: SessionStore;
  prices: PriceStore;
  /** True when the job of `once` has made its write already: it runs again after its worker died. */
  alreadyWritten(once: WriteOnce | undefined): Promise<boolean>;
}

export function createStore(redis: Redis): Store {
  return {
    users: new UserStore(redis), channels: new ChannelStore(redis), tokens: new TokenStore(redis), sessions: new SessionStore(redis), prices: new PriceStore(redis),
    alreadyWritten: (once) => alreadyWritten(redis, once),
  };
}
