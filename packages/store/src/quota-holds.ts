import { randomUUID } from 'node:crypto';
import { defineLuaScripts, type RedisClient as Redis } from '@gateway/config';
import { budgetPeriods, chargedNanos, MAX_REQUEST_TOKENS, nanosBounded, tokenCount, type BudgetPeriod } from '@gateway/contracts';
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
  /** The key's or user's budget in money is spent (`exhausted`) or held by requests in flight; `maxBudget` in nano-dollars. */
  | { reason: 'key_budget' | 'user_budget'; exhausted: boolean; maxBudget: number; period: BudgetPeriod }
  | { reason: 'gone' };

/** What a request used, charged when it settles: quota units, and nano-dollars (`costOf`). */
export interface SettledUsage {
  quota: number;
  cost?: number;
}

type Scripted = Redis & {
  gwReserveQuota(...args: (string | number)[]): Promise<[string, string | number | undefined, string?, string?]>;
  gwReleaseQuota(...args: string[]): Promise<number>;
  gwSettleQuota(...args: (string | number)[]): Promise<number>;
};

/**
 * Each admitted request holds its worst case (its prompt plus the most it may produce) on its
 * key's and its user's quota until it ends, so a burst of requests cannot together spend past
 * the quota: a request is admitted only while the quota less what is held is above zero. A key
 * or user with a budget in money (`max_budget`) is held the same way, at the worst case's cost. Holds
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
    return refusalOf(await this.run(subject, '', 0, 0, 'check', 0));
  }

  /**
   * Holds `amount` quota units, `cost` nano-dollars on a budget, and one in-flight slot for
   * `ttlMs` (past the request's deadline); resolves with the hold (to release) or why the
   * request may not start.
   */
  async reserve(subject: HoldSubject, amount: number, ttlMs: number, cost = 0): Promise<{ hold: string } | HoldRefusal> {
    // An amount that is no number (a worst case some field made NaN) holds the most, never nothing.
    const held = Number.isFinite(amount) ? tokenCount(Math.ceil(amount)) : MAX_REQUEST_TOKENS;
    const heldCost = nanosBounded(cost);
    // The tokens last, as holds have always ended (includes/holds.lua): the money beside the id.
    const hold = `${randomUUID()}.${heldCost}:${held}`;
    return refusalOf(await this.run(subject, hold, held, Math.ceil(ttlMs), 'reserve', heldCost)) ?? { hold };
  }

  /** Gives holds of one key back; giving one back twice is harmless. */
  async release(tokenId: number, userId: number, holds: readonly string[]): Promise<void> {
    if (holds.length === 0) return;
    await this.redis.gwReleaseQuota(...holdKeys(tokenId, userId), ...holds);
  }

  /**
   * The request ended: charges its usage (`quota` and `cost`, when it was answered) to its key
   * and user and gives its hold back, in one step.
   */
  async settle(tokenId: number, userId: number, hold: string, usage: SettledUsage | undefined): Promise<void> {
    const cost = chargedNanos(usage?.cost);
    await this.redis.gwSettleQuota(
      keys.token(tokenId), keys.user(userId), ...holdKeys(tokenId, userId),
      hold, usage ? tokenCount(usage.quota) : 0, usage ? 1 : 0, Math.floor(Date.now() / 1000), cost,
    );
  }

  private run(subject: HoldSubject, hold: string, amount: number, ttlMs: number, mode: 'check' | 'reserve', cost: number) {
    const { tokenId, userId } = subject;
    return this.redis.gwReserveQuota(
      keys.token(tokenId), keys.user(userId), ...holdKeys(tokenId, userId),
      hold, amount, ttlMs, subject.keyInFlightCap, subject.userInFlightCap, mode, cost,
    );
  }
}

/** The keys of a key's and its user's holds: each one's set, sum of tokens and sum of nano-dollars. */
const holdKeys = (tokenId: number, userId: number) => [
  keys.holds('token', tokenId), keys.heldSum('token', tokenId), keys.heldCost('token', tokenId),
  keys.holds('user', userId), keys.heldSum('user', userId), keys.heldCost('user', userId),
];

function refusalOf([status, detail, maxBudget, period]: [string, string | number | undefined, string?, string?]): HoldRefusal | undefined {
  switch (status) {
    case 'OK': return undefined;
    case 'KEY_IN_FLIGHT': return { reason: 'key_in_flight', cap: Number(detail) };
    case 'USER_IN_FLIGHT': return { reason: 'user_in_flight', cap: Number(detail) };
    case 'KEY_QUOTA': return { reason: 'key_quota', exhausted: detail === 'exhausted' };
    case 'USER_QUOTA': return { reason: 'user_quota', exhausted: detail === 'exhausted' };
    case 'KEY_BUDGET':
    case 'USER_BUDGET': return {
      reason: status === 'KEY_BUDGET' ? 'key_budget' : 'user_budget', exhausted: detail === 'exhausted',
      maxBudget: Number(maxBudget ?? 0), period: (budgetPeriods as readonly string[]).includes(period ?? '') ? period as BudgetPeriod : 'none',
    };
    default: return { reason: 'gone' };
  }
}
