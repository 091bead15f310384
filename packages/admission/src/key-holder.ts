import { TokenStatus, UserStatus, type ModelCaller } from '@gateway/contracts';
import type { StoredToken, StoredUser } from '@gateway/store';

/**
 * The caller of a model route, resolved from its API key, with the limits of the key and of its
 * user: the user's bind every key of the user, and the key's can only narrow them.
 */
export interface KeyHolder extends ModelCaller {
  /** Models the key may use (those both the key and its user allow), or all. */
  models: readonly string[] | 'all';
  /** The key's requests per minute; 0 means no limit. */
  rpmLimit: number;
  /** The user's requests per minute across all its keys; 0 means no limit. */
  userRpmLimit: number;
  /** Priority of the key's requests: batch when the key or its user says so (`X-Priority` may only lower it). */
  priority: 'interactive' | 'batch';
  /** Caps on requests in flight, of the key and of all the user's keys; 0 means none. */
  keyInFlightCap: number;
  userInFlightCap: number;
  /** Whether requests must hold quota: the key's quota is not unlimited, or the user has an allowance. */
  quotaLimited: boolean;
  /** Whether requests must hold their worst case's cost: the key or its user has a budget in money. */
  budgetLimited: boolean;
}

/** The caller a model job carries: who the key is, for routing, charging and the request log. */
export const callerOf = (holder: KeyHolder): ModelCaller => ({ tokenId: holder.tokenId, tokenName: holder.tokenName, userId: holder.userId, group: holder.group });

/** The models both lists allow; an empty list allows all. */
function allowedModels(keyModels: readonly string[], userModels: readonly string[]): readonly string[] | 'all' {
  if (keyModels.length === 0 && userModels.length === 0) return 'all';
  if (keyModels.length === 0) return userModels;
  if (userModels.length === 0) return keyModels;
  return keyModels.filter((model) => userModels.includes(model));
}

/**
 * The body a caller with a budget in money is sent: with the output cap its hold assumes where
 * it names none (the endpoint's `capOutput`); undefined when it is sent as it came.
 */
export function cappedForBudget<Body>(holder: Pick<KeyHolder, 'budgetLimited'>, endpoint: { capOutput?(body: Body): Body | undefined }, body: Body): Body | undefined {
  return holder.budgetLimited ? endpoint.capOutput?.(body) : undefined;
}

/** Whether the holder's key (and its user) may use `model`. */
export const mayUseModel = (holder: KeyHolder, model: string) => holder.models === 'all' || holder.models.includes(model);

/** The holder of `token`, with its user's limits (a missing user leaves the key without one). */
export function holderOf(token: StoredToken, user: StoredUser | null | undefined): KeyHolder {
  const batch = token.priority === 'batch' || user?.priority === 'batch';
  return {
    tokenId: token.id, tokenName: token.name, userId: token.user_id, group: user?.group || 'default',
    models: allowedModels(token.models ?? [], user?.models ?? []),
    rpmLimit: token.rpm_limit ?? 0, userRpmLimit: user?.rpm_limit ?? 0,
    priority: batch ? 'batch' : 'interactive',
    keyInFlightCap: token.max_in_flight ?? 0, userInFlightCap: user?.max_in_flight ?? 0,
    quotaLimited: !token.unlimited_quota || (user?.quota ?? 0) > 0,
    budgetLimited: (token.max_budget ?? 0) > 0 || (user?.max_budget ?? 0) > 0,
  };
}

/**
 * A key as its caches keep it: its holder, and what `keyRefusal` checks at each use (its expiry
 * passes while it is kept).
 */
export interface KeyRecord {
  holder: KeyHolder;
  token: Pick<StoredToken, 'status' | 'expired_time'>;
  user: Pick<StoredUser, 'status'> | null;
}

/** The record of `token` and its user (missing: null) for a cache. */
export function keyRecordOf(token: StoredToken, user: StoredUser | null | undefined): KeyRecord {
  return { holder: holderOf(token, user), token: { status: token.status, expired_time: token.expired_time }, user: user ? { status: user.status } : null };
}

/**
 * Why `token` (of `user`) may not be used at `now`, as its 401's message; undefined when it may:
 * a disabled, expired or exhausted key, one past its `expired_time`, or a disabled or missing user.
 * The gateway asks at each request, the batch worker at each line.
 */
export function keyRefusal(token: Pick<StoredToken, 'status' | 'expired_time'>, user: Pick<StoredUser, 'status'> | null | undefined, now = Date.now()): string | undefined {
  switch (token.status) {
    case TokenStatus.enabled:
      break;
    case TokenStatus.expired:
      return 'this API key has expired';
    case TokenStatus.exhausted:
      return 'this API key has used up its quota';
    default:
      return 'this API key is disabled';
  }
  if (token.expired_time !== -1 && token.expired_time * 1000 <= now) return 'this API key has expired';
  if (user?.status !== UserStatus.enabled) return "this API key's user is disabled";
  return undefined;
}
