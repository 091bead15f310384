/**
 * What the gateway does to a management input before it becomes a job, so that no job (and so
 * nothing in Redis, its append-only file or the dashboard) ever holds a secret in clear:
 * sign-ins are checked here and the job only says whom to sign in; new passwords are hashed
 * here; channel keys are encrypted here, with a mask made for display.
 */
import { badRequest, type AdminInput, type AdminOperationName } from '@gateway/contracts';
import { baseUrlProblem, type AddressPolicy } from '@gateway/providers';
import { maskSecret, type ChannelKeyCipher } from '@gateway/store';
import type { PasswordLane } from './auth/password-lane.ts';
import type { PasswordSignIn } from './auth/password-sign-in.ts';

export interface AdminJobsOptions {
  signIn: PasswordSignIn;
  lane: PasswordLane;
  cipher: ChannelKeyCipher;
  addressPolicy: AddressPolicy;
}

export class AdminJobs {
  private readonly options: AdminJobsOptions;

  constructor(options: AdminJobsOptions) {
    this.options = options;
  }

  /** The job input for a validated management input; `address` is the client's, for sign-in throttling. */
  async prepare(operation: AdminOperationName, input: unknown, address: string): Promise<unknown> {
    switch (operation) {
      case 'user.login':
      case 'session.create': {
        const { username, password } = input as AdminInput<'user.login'>;
        const user = await this.options.signIn.verify(username, password, address);
        return { user_id: user.id };
      }
      case 'user.create':
      case 'user.update': {
        const { password, ...rest } = input as AdminInput<'user.update'>;
        return password === undefined ? rest : { ...rest, password_hash: await this.options.lane.hash(password) };
      }
      case 'channel.create':
      case 'channel.update': {
        const { key, ...rest } = input as AdminInput<'channel.update'>;
        if (rest.base_url !== undefined) {
          const problem = await baseUrlProblem(rest.base_url, this.options.addressPolicy);
          if (problem) throw badRequest(`base_url may not point there: ${problem}`, 'base_url');
        }
        return key === undefined ? rest : { ...rest, key: this.options.cipher.encrypt(key), key_mask: maskSecret(key) };
      }
      default:
        return input;
    }
  }
}
