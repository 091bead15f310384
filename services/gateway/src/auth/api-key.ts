import { GatewayError, TokenStatus, UserStatus, type ModelCaller } from '@gateway/contracts';
import type { Redis } from '@gateway/queue';
import { EVERYTHING, InvalidationFeed, sha256, type Store, type TokenStore, type UserStore } from '@gateway/store';

/** The caller of a model route, resolved from its API key. */
export interface KeyHolder extends ModelCaller {
  /** Models the key may use; empty means all. */
  models: readonly string[];
  /** Requests per minute; 0 means no limit. */
  rpmLimit: number;
  /** Default priority of the key's requests (`X-Priority` overrides it). */
  priority: 'interactive' | 'batch';
}

interface CachedKey {
  holder: KeyHolder;
  tokenStatus: number;
  /** Unix seconds; -1 never. */
  expiredTime: number;
  userStatus: number;
  cachedAt: number;
}

export interface ApiKeyAuthOptions {
  tokens: TokenStore;
  users: UserStore;
  feed: InvalidationFeed;
  /** Entries older than this are re-read, in case the feed missed a change. Default 60 s. */
  maxAgeMs?: number;
  /** Most keys kept. Default 10,000. */
  maxEntries?: number;
}

export interface CredentialSources {
  headers: Record<string, string | string[] | undefined>;
  query?: unknown;
  /** Accept `x-goog-api-key` too (the Gemini path). */
  googleHeader?: boolean;
}

const invalidKey = (message: string) => new GatewayError({ status: 401, code: 'invalid_api_key', message });

const first = (value: string | string[] | undefined) => (Array.isArray(value) ? value[0] : value);

/**
 * API-key authentication for the model routes (both wire formats). Keys are looked up by their
 * hash in the store once and then served from an in-process cache, which the store's
 * invalidation feed empties on any token or user change, so a revoked key stops working as
 * soon as the announcement arrives (milliseconds), with no Redis round trip per request.
 */
export class ApiKeyAuth {
  private readonly tokens: TokenStore;
  private readonly users: UserStore;
  private readonly feed: InvalidationFeed;
  private readonly maxAgeMs: number;
  private readonly maxEntries: number;
  private readonly cache = new Map<string, CachedKey>();
  /** Bumped on every invalidation; a lookup begun before a bump is not cached. */
  private version = 0;

  constructor(options: ApiKeyAuthOptions) {
    this.tokens = options.tokens;
    this.users = options.users;
    this.feed = options.feed;
    this.maxAgeMs = options.maxAgeMs ?? 60_000;
    this.maxEntries = options.maxEntries ?? 10_000;
    this.feed.on((message) => {
      if (message === EVERYTHING || message.startsWith('token:') || message.startsWith('user:')) this.clear();
    });
  }

  /** An ApiKeyAuth on the store, with a subscriber connection of its own beside `redis`. */
  static onStore(store: Store, redis: Redis): ApiKeyAuth {
    return new ApiKeyAuth({ tokens: store.tokens, users: store.users, feed: InvalidationFeed.beside(redis, 'gateway-invalidations') });
  }

  async start(): Promise<void> {
    await this.feed.start();
  }

  close(): void {
    this.feed.close();
  }

  clear(): void {
    this.version++;
    this.cache.clear();
  }

  /**
   * The key holder, or 401 invalid_api_key: no key, an unknown, disabled, expired or exhausted
   * key, or a disabled user. A key in the query string is refused: keys belong in a header.
   */
  async authenticate(sources: CredentialSources): Promise<KeyHolder> {
    const query = sources.query as Record<string, unknown> | undefined;
    if (query && typeof query === 'object' && ('key' in query || 'api_key' in query)) {
      throw invalidKey('API keys are not accepted in the query string: send it in the Authorization header (Bearer sk-…)' + (sources.googleHeader ? ' or the x-goog-api-key header' : ''));
    }
    const key = this.keyFrom(sources);
    const hash = sha256(key);
    let entry = this.cache.get(hash);
    if (!entry || Date.now() - entry.cachedAt > this.maxAgeMs) {
      entry = await this.lookup(key, hash);
    }
    return this.check(entry);
  }

  /** 403 when the key is limited to models that do not include `model`. */
  authorizeModel(holder: KeyHolder, model: string): void {
    if (holder.models.length > 0 && !holder.models.includes(model)) {
      throw new GatewayError({
        status: 403,
        code: 'permission_denied',
        message: `this API key may not use the model "${model}"`,
        param: 'model',
      });
    }
  }

  private keyFrom(sources: CredentialSources): string {
    const authorization = first(sources.headers.authorization)?.trim();
    if (authorization) {
      const match = /^Bearer\s+(.+)$/i.exec(authorization);
      if (!match) throw invalidKey('malformed Authorization header: send Authorization: Bearer sk-…');
      return match[1]!.trim();
    }
    const google = sources.googleHeader ? first(sources.headers['x-goog-api-key'])?.trim() : undefined;
    if (google) return google;
    throw invalidKey(
      sources.googleHeader
        ? 'no API key: send Authorization: Bearer sk-… or x-goog-api-key: sk-…'
        : 'no API key: send Authorization: Bearer sk-…',
    );
  }

  private async lookup(key: string, hash: string): Promise<CachedKey> {
    const version = this.version;
    const token = await this.tokens.findByKey(key);
    if (!token) {
      this.cache.delete(hash);
      throw invalidKey('invalid API key');
    }
    const user = await this.users.get(token.user_id);
    const entry: CachedKey = {
      holder: {
        tokenId: token.id, userId: token.user_id, group: user?.group || 'default', models: token.models ?? [],
        rpmLimit: token.rpm_limit ?? 0, priority: token.priority === 'batch' ? 'batch' : 'interactive',
      },
      tokenStatus: token.status,
      expiredTime: token.expired_time,
      userStatus: user ? user.status : UserStatus.disabled,
      cachedAt: Date.now(),
    };
    if (version === this.version) {
      if (this.cache.size >= this.maxEntries) this.cache.delete(this.cache.keys().next().value!);
      this.cache.set(hash, entry);
    }
    return entry;
  }

  private check(entry: CachedKey): KeyHolder {
    switch (entry.tokenStatus) {
      case TokenStatus.enabled:
        break;
      case TokenStatus.expired:
        throw invalidKey('this API key has expired');
      case TokenStatus.exhausted:
        throw invalidKey('this API key has used up its quota');
      default:
        throw invalidKey('this API key is disabled');
    }
    if (entry.expiredTime !== -1 && entry.expiredTime * 1000 <= Date.now()) throw invalidKey('this API key has expired');
    if (entry.userStatus !== UserStatus.enabled) throw invalidKey("this API key's user is disabled");
    return entry.holder;
  }
}
