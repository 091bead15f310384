import { forbidden, unauthenticated } from '@gateway/contracts';
import { hashPassword, type StoredUser, type UserStore } from '@gateway/store';
import type { LoginThrottle } from './login-throttle.ts';
import type { PasswordLane } from './password-lane.ts';

/** Compared against when the username is unknown, so the answer takes as long either way. */
const unknownUserHash = hashPassword('no such user: a password nobody has');

/**
 * Checks a username and password in the gateway itself (it may read the store to
 * authenticate), so a password never travels in a job: throttled per username and address,
 * computed in the gateway's password lane, and timed the same for known and unknown users.
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

  /** The user, or 401 (wrong name or password), 403 (disabled) or 429 (too many failures). */
  async verify(username: string, password: string, address: string): Promise<StoredUser> {
    await this.throttle.attempt(username, address);
    const user = await this.users.findByUsername(username);
    const valid = await this.lane.verify(password, user?.password_hash || (await unknownUserHash));
    if (!user || !valid) throw unauthenticated('invalid username or password');
    await this.throttle.succeeded(username, address);
    if (user.status !== 1) throw forbidden('this user is disabled');
    return user;
  }
}
