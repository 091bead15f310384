import { LRUCache } from 'lru-cache';
export type { KeyHolder } from '@gateway/admission';
import { invalidApiKey, modelNotAllowed } from '@gateway/contracts';
import { keyRecordOf, keyRefusal, mayUseModel, type KeyHolder, type KeyRecord } from '@gateway/admission';
import { sha256, touchesCallers, type InvalidationFeed, type TokenStore, type UserStore } from '@gateway/store';


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
  /** Accept `x-api-key` too (Anthropic's Messages path, as its SDKs and Claude Code send it). */
  anthropicHeader?: boolean;
}

const first = (value: string | string[] | undefined) => (Array.isArray(value) ? value[0] : value);

/**
 * API-key authentication for the model routes (both wire formats). Keys are looked up by their
 * hash in the store once and then served from an in-process LRU cache, which the store's
 * invalidation feed empties on any token or user change, so a revoked key stops working as
 * soon as the announcement arrives (milliseconds), with no Redis round trip per request.
 * Concurrent first requests with one key share one lookup. Unknown keys are not cached.
 */
export class ApiKeyAuth {
  private readonly tokens: TokenStore;
  private readonly users: UserStore;
  /** Key hash → holder; a lookup still running when the cache is cleared is not kept. */
  private readonly cache: LRUCache<string, KeyRecord, string>;
  /** Bumped by every `clear`: a lookup that began before it is read again. */
  private generation = 0;

  constructor(options: ApiKeyAuthOptions) {
    this.tokens = options.tokens;
    this.users = options.users;
    this.cache = new LRUCache<string, KeyRecord, string>({
      max: options.maxEntries ?? 10_000,
      ttl: options.maxAgeMs ?? 60_000,
      fetchMethod: (_hash, _stale, { context: key }) => this.lookup(key),
    });
    options.feed.on((message) => {
      if (touchesCallers(message)) this.clear();
    });
  }

  clear(): void {
    this.generation++;
    this.cache.clear();
  }

  /**
   * The key holder, or 401 invalid_api_key: no key, an unknown, disabled, expired or exhausted
   * key, or a disabled user. A key in the query string is refused: keys belong in a header.
   */
  async authenticate(sources: CredentialSources): Promise<KeyHolder> {
    const query = sources.query as Record<string, unknown> | undefined;
    if (query && typeof query === 'object' && ('key' in query || 'api_key' in query)) {
      throw invalidApiKey('API keys are not accepted in the query string: send it in the Authorization header (Bearer sk-…)' + (sources.googleHeader ? ' or the x-goog-api-key header' : ''));
    }
    const key = this.keyFrom(sources);
    // Cleared while it was looked up (a token or user changed), a lookup is aborted: its promise
    // rejects ("deleted": it was a 500) for every request waiting on it, and only the first of
    // them is told why in its status. The cache's generation tells them all: each reads the key
    // once more, past the cache, so none answers from what was read before the change.
    const generation = this.generation;
    const entry = await this.cache.fetch(sha256(key), { context: key }).then(
      (found) => (this.generation === generation ? found : this.lookup(key)),
      (error: unknown) => {
        if (this.generation === generation) throw error;
        return this.lookup(key);
      },
    );
    if (!entry) throw invalidApiKey('invalid API key');
    return this.check(entry);
  }

  /** 403 when the key (or its user) is limited to models that do not include `model`. */
  authorizeModel(holder: KeyHolder, model: string): void {
    if (!mayUseModel(holder, model)) {
      throw modelNotAllowed(model);
    }
  }

  private keyFrom(sources: CredentialSources): string {
    const authorization = first(sources.headers.authorization)?.trim();
    if (authorization) {
      const match = /^Bearer\s+(.+)$/i.exec(authorization);
      if (!match) throw invalidApiKey('malformed Authorization header: send Authorization: Bearer sk-…');
      return match[1]!.trim();
    }
    const google = sources.googleHeader ? first(sources.headers['x-goog-api-key'])?.trim() : undefined;
    if (google) return google;
    const anthropic = sources.anthropicHeader ? first(sources.headers['x-api-key'])?.trim() : undefined;
    if (anthropic) return anthropic;
    throw invalidApiKey(
      sources.googleHeader
        ? 'no API key: send Authorization: Bearer sk-… or x-goog-api-key: sk-…'
        : sources.anthropicHeader
          ? 'no API key: send x-api-key: sk-… or Authorization: Bearer sk-…'
          : 'no API key: send Authorization: Bearer sk-…',
    );
  }

  /** The key's holder and statuses from the store; undefined for a key that does not exist. */
  private async lookup(key: string): Promise<KeyRecord | undefined> {
    const token = await this.tokens.findByKey(key);
    if (!token) return undefined;
    return keyRecordOf(token, await this.users.get(token.user_id));
  }

  private check(entry: KeyRecord): KeyHolder {
    const refusal = keyRefusal(entry.token, entry.user);
    if (refusal) throw invalidApiKey(refusal);
    return entry.holder;
  }
}
