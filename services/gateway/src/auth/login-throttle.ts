import { join } from 'node:path';
import { defineLuaScripts, luaScripts } from '@gateway/config';
import { GatewayError, rateLimited, usernameKey } from '@gateway/contracts';
import type { Redis } from '@gateway/queue';
import { sha256 } from '@gateway/store';
import { signInAddress } from './sign-in-address.ts';

export interface LoginThrottleOptions {
  /** Failures for one username from one client address before that address must wait for it. */
  failuresPerUser: number;
  /** Failures from one client address, whatever the names, before it must wait. */
  failuresPerAddress: number;
  /**
   * Failures for one existing user from all addresses together, past which an address that has
   * already failed for that user must wait; an address that has not is never held back by it.
   */
  failuresPerUserOverall: number;
  /** The window the failures are counted in, from the first one. */
  windowSeconds: number;
}

/** `gwLoginAttempt`, `gwLoginRelease` and `gwLoginUserRelease`, from `commands/`. */
const scripts = luaScripts(join(import.meta.dirname, 'commands'));

type Scripted = Redis & {
  gwLoginAttempt(key: string, field: string, perAddress: number, perUser: number, windowMs: number): Promise<[number, number]>;
  gwLoginRelease(key: string, field: string, how: 'clear' | 'undo'): Promise<number>;
  gwLoginUserRelease(key: string): Promise<number>;
};

/** One sign-in attempt, counted; what `forUser` and `succeeded` need to adjust its counts. */
export interface SignInAttempt {
  readonly addressKey: string;
  readonly nameField: string;
  /** The name had failed from this address before, within the window. */
  readonly failedHereBefore: boolean;
  userKey?: string;
}

/**
 * Failed sign-ins, counted in Redis (so every gateway sees them). Per client address: one hash
 * holding its total and its failures per name (a digest of the name, so a long name costs no
 * more than a short one), refused without a write once over either limit, so Redis holds at
 * most `failuresPerAddress + 1` small fields per address, whatever names are tried. Per existing
 * user: one counter across addresses, so a name that does not exist costs nothing beyond its
 * address's hash. An attacker can thus refuse a user's sign-in only from the attacker's own
 * addresses: the overall count binds only addresses that have failed for that user themselves.
 */
export class LoginThrottle {
  private readonly redis: Scripted;
  private readonly options: LoginThrottleOptions;

  constructor(redis: Redis, options: LoginThrottleOptions) {
    defineLuaScripts(redis, scripts);
    this.redis = redis as Scripted;
    this.options = options;
  }

  /**
   * Counts a sign-in attempt before its password is checked, so that attempts made in parallel
   * count at once; past the address's or the name's limit from this address, 429 with the time
   * left in the window, and nothing counted. A right password then takes its attempt back
   * (`succeeded`); a wrong one leaves it counted.
   */
  async attempt(username: string, address: string): Promise<SignInAttempt> {
    const addressKey = `gw:login-fail:addr:${signInAddress(address)}`;
    const nameField = sha256(usernameKey(username)).slice(0, 16);
    const { failuresPerAddress, failuresPerUser, windowSeconds } = this.options;
    const [refused, detail] = await this.redis.gwLoginAttempt(addressKey, nameField, failuresPerAddress, failuresPerUser, windowSeconds * 1000);
    if (refused) throw this.tooMany(detail);
    return { addressKey, nameField, failedHereBefore: detail > 0 };
  }

  /**
   * Counts the attempt against the existing user `userId` across addresses. Past the overall
   * limit, an address that has failed for this user before is refused (the caller then takes
   * the attempt back with `withdraw`); one that has not still gets its password checked, so the
   * user's own sign-in from anywhere else goes through however many addresses an attacker has.
   */
  async forUser(attempt: SignInAttempt, userId: number | undefined): Promise<void> {
    const userKey = `gw:login-fail:user-id:${userId ?? 0}`;
    // No user: no count (unknown names cost nothing), but one round trip all the same, so the
    // answer takes as long for a name that does not exist.
    if (userId === undefined) return void (await this.redis.pttl(userKey));
    const [[, count]] = (await this.redis.multi().incr(userKey).expire(userKey, this.options.windowSeconds, 'NX').exec()) as [[null, number]];
    attempt.userKey = userKey;
    if (count <= this.options.failuresPerUserOverall || !attempt.failedHereBefore) return;
    throw this.tooMany(await this.redis.pttl(userKey));
  }

  /** A right password forgets the name's failures from this address and takes its attempt back. */
  async succeeded(attempt: SignInAttempt): Promise<void> {
    await this.release(attempt, 'clear');
  }

  /** Takes back an attempt whose password was not checked. */
  async withdraw(attempt: SignInAttempt): Promise<void> {
    await this.release(attempt, 'undo');
  }

  private async release(attempt: SignInAttempt, how: 'clear' | 'undo'): Promise<void> {
    // Separate calls: on a Redis Cluster the address's and the user's keys live in different slots.
    await Promise.all([
      this.redis.gwLoginRelease(attempt.addressKey, attempt.nameField, how),
      attempt.userKey ? this.redis.gwLoginUserRelease(attempt.userKey) : undefined,
    ]);
  }

  private tooMany(pttl: number): GatewayError {
    return rateLimited(
      'too many failed sign-ins; wait before trying again',
      Math.max(1, Math.ceil((pttl > 0 ? pttl : this.options.windowSeconds * 1000) / 1000)),
    );
  }
}
