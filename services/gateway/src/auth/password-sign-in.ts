import { unauthenticated, UserStatus } from '@gateway/contracts';
import { hashPassword, type StoredUser, type UserStore } from '@gateway/store';
import type { LoginThrottle } from './login-throttle.ts';
import type { PasswordLane } from './password-lane.ts';

/** Compared against when the username is unknown, so the answer takes as long either way. */
const unknownUserHash = hashPassword('no such user: a password nobody has');

/**
 * Checks a username and password in the gateway itself (it may read the store to
 * authenticate), so a password never travels in a job: throttled per address and per name
 * (`LoginThrottle`), computed in the gateway's password lane, and timed the same for known and
 * unknown users.
 */
export class PasswordSignIn {
  private readonly users: UserStore;
  private readonly lane: PasswordLane;
  private readonly throttle: LoginThrottle;

  constructor(users: UserStore, lane: PasswordLane, throttle: LoginThrottle) {
    this.users = users;
    this.lane = lane;
    this.throttle = throttle;
  }

  /**
   * The user, or 401 or 429 (too many failures). A disabled user gets the same 401 as a wrong
   * password, right password or not, and its attempt stays counted: neither the answer nor the
   * throttle tells whether a password of a disabled account is right.
   */
  async verify(username: string, password: string, address: string): Promise<StoredUser> {
    const attempt = await this.throttle.attempt(username, address);
    let user: StoredUser | null;
    let valid: boolean;
    try {
      user = await this.users.findByUsername(username);
      await this.throttle.forUser(attempt, user?.id);
      valid = await this.lane.verify(password, user?.password_hash || (await unknownUserHash));
    } catch (error) {
      // Not checked (past the overall limit, the lane full, Redis failing): no failure to count.
      await this.throttle.withdraw(attempt).catch(() => {});
      throw error;
    }
    if (!user || !valid || user.status !== UserStatus.enabled) throw unauthenticated('invalid username or password');
    await this.throttle.succeeded(attempt);
    return user;
  }
}
