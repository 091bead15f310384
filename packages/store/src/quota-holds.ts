import { randomUUID } from 'node:crypto';
import { defineLuaScripts, type RedisClient as Redis } from '@gateway/config';
import { MAX_REQUEST_TOKENS, tokenCount } from '@gateway/contracts';
import { keys } from './keys.ts';
import { storeScripts } from './scripts.ts';

/** Whose quota and in-flight slots a request holds: its key and the key's user, with their caps. */
export interface HoldSubject {
  tokenId: number;
  userId: number;
  /** Requests of the key in flight at once; 0: no cap. */
  keyInFlightCap: number;
  /** Requests of all the user's keys in flight at once; 0: no cap. */
  userInFlightCap: number;
}

/**
 * Why a request may not start: its key or user has as many requests in flight as its cap; or
 * its key's `remain_quota` or its user's `quota` is used up (`exhausted`), or what is left is
 * already held by requests in flight (`held`: retry when they end).
 */
export type HoldRefusal =
  | { reason: 'key_in_flight' | 'user_in_flight'; cap: number }
  | { reason: 'key_quota' | 'user_quota'; exhausted: boolean }
  | { reason: 'gone' };

type Scripted = Redis & {
  gwReserveQuota(...args: (string | number)[]): Promise<[string, string | number | undefined]>;
  gwReleaseQuota(...args: string[]): Promise<number>;
  gwSettleQuota(...args: (string | number)[]): Promise<number>;
};

/**
 * Each admitted request holds its worst case (its prompt plus the most it may produce) on its
 * key's and its user's quota until it ends, so a burst of requests cannot together spend past
 * the quota: a request is admitted only while the quota less what is held is above zero. Holds
 * also count a key's and a user's requests in flight, for their caps. When the request ends, its
 * charge and the hold's release are one step (`settle`); a request that never ran gives its hold
 * back (`release`); one whose process died runs out at its expiry. Every key lives in the store's slot, beside the records whose quota it guards.
 */
export class QuotaHolds {
  private readonly redis: Scripted;

  constructor(redis: Redis) {
    defineLuaScripts(redis, storeScripts);
    this.redis = redis as Scripted;
  }

  /** Whether a request of the subject could be admitted now, without holding anything. */
  async check(subject: HoldSubject): Promise<HoldRefusal | undefined> {
    const [status, detail] = await this.run(subject, '', 0, 0, 'check');
    return refusalOf(status, detail);
  }

  /**
   * Holds `amount` quota units and one in-flight slot for `ttlMs` (past the request's deadline);
   * resolves with the hold (to release) or why the request may not start.
   */
  async reserve(subject: HoldSubject, amount: number, ttlMs: number): Promise<{ hold: string } | HoldRefusal> {
    // An amount that is no number (a worst case some field made NaN) holds the most, never nothing.
    const held = Number.isFinite(amount) ? tokenCount(Math.ceil(amount)) : MAX_REQUEST_TOKENS;
    const hold = `${randomUUID()}:${held}`;
    const [status, detail] = await this.run(subject, hold, held, Math.ceil(ttlMs), 'reserve');
    return refusalOf(status, detail) ?? { hold };
  }

  /** Gives holds of one key back; giving one back twice is harmless. */
  async release(tokenId: number, userId: number, holds: readonly string[]): Promise<void> {
    if (holds.length === 0) return;
    await this.redis.gwReleaseQuota(
      keys.holds('token', tokenId), keys.heldSum('token', tokenId), keys.holds('user', userId), keys.heldSum('user', userId), ...holds,
    );
  }

  /**
   * The request ended: charges its usage (`quota`, when it was answered) to its key and user and
   * gives its hold back, in one step.
   */
  async settle(tokenId: number, userId: number, hold: string, usage: { quota: number } | undefined): Promise<void> {
    await this.redis.gwSettleQuota(
      keys.token(tokenId), keys.user(userId),
      keys.holds('token', tokenId), keys.heldSum('token', tokenId), keys.holds('user', userId), keys.heldSum('user', userId),
      hold, usage ? tokenCount(usage.quota) : 0, usage ? 1 : 0, Math.floor(Date.now() / 1000),
    );
  }

  private run(subject: HoldSubject, hold: string, amount: number, ttlMs: number, mode: 'check' | 'reserve') {
    const { tokenId, userId } = subject;
    return this.redis.gwReserveQuota(
      keys.token(tokenId), keys.user(userId),
      keys.holds('token', tokenId), keys.heldSum('token', tokenId), keys.holds('user', userId), keys.heldSum('user', userId),
      hold, amount, ttlMs, subject.keyInFlightCap, subject.userInFlightCap, mode,
    );
  }
}

function refusalOf(status: string, detail: string | number | undefined): HoldRefusal | undefined {
  switch (status) {
    case 'OK': return undefined;
    case 'KEY_IN_FLIGHT': return { reason: 'key_in_flight', cap: Number(detail) };
    case 'USER_IN_FLIGHT': return { reason: 'user_in_flight', cap: Number(detail) };
    case 'KEY_QUOTA': return { reason: 'key_quota', exhausted: detail === 'exhausted' };
    case 'USER_QUOTA': return { reason: 'user_quota', exhausted: detail === 'exhausted' };
    default: return { reason: 'gone' };
  }
}
