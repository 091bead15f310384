/**
 * What the gateway does to a management input before it becomes a job, so that no job or reply
 * (and so nothing in Redis, its append-only file or the dashboard) ever holds a secret in clear:
 * sign-ins are checked here and the job only says whom to sign in; new access tokens, API keys
 * and dashboard sessions are made here, the job carrying only their digests, and the secret
 * goes from here straight into the answer; new passwords are hashed here; channel keys are
 * encrypted here, with a mask made for display.
 */
import { badRequest, type AdminInput, type AdminOperationName } from '@gateway/contracts';
import { baseUrlProblem, type AddressPolicy } from '@gateway/providers';
import { issueApiKey, maskSecret, newAccessToken, SessionStore, sha256, type ChannelKeyCipher } from '@gateway/store';
import type { PasswordLane } from './auth/password-lane.ts';
import type { PasswordSignIn } from './auth/password-sign-in.ts';

export interface AdminJobsOptions {
  signIn: PasswordSignIn;
  lane: PasswordLane;
  cipher: ChannelKeyCipher;
  addressPolicy: AddressPolicy;
}

/** A job's input, and what the gateway adds to the worker's answer (the secret it made). */
export interface PreparedJob {
  input: unknown;
  reveal?: Record<string, string>;
}

export class AdminJobs {
  private readonly options: AdminJobsOptions;

  constructor(options: AdminJobsOptions) {
    this.options = options;
  }

  /** The job input for a validated management input; `address` is the client's, for sign-in throttling. */
  async prepare(operation: AdminOperationName, input: unknown, address: string): Promise<PreparedJob> {
    switch (operation) {
      case 'user.login': {
        const accessToken = newAccessToken();
        const signedIn = await this.signIn(input, address);
        return { input: { ...signedIn, access_token_hash: sha256(accessToken) }, reveal: { access_token: accessToken } };
      }
      case 'session.create': {
        const { session, hash } = SessionStore.issue();
        const signedIn = await this.signIn(input, address);
        return { input: { ...signedIn, session_hash: hash }, reveal: { session } };
      }
      case 'session.delete':
        return { input: { session_hash: sha256((input as AdminInput<'session.delete'>).session) } };
      case 'token.create': {
        const { key, issued } = issueApiKey();
        return { input: { ...(input as object), ...issued }, reveal: { key } };
      }
      case 'user.create':
      case 'user.update': {
        const { password, ...rest } = input as AdminInput<'user.update'>;
        return { input: password === undefined ? rest : { ...rest, password_hash: await this.options.lane.hash(password) } };
      }
      case 'channel.create':
      case 'channel.update': {
        const { key, ...rest } = input as AdminInput<'channel.update'>;
        if (rest.base_url !== undefined) {
          const problem = await baseUrlProblem(rest.base_url, this.options.addressPolicy);
          if (problem) throw badRequest(`base_url may not point there: ${problem}`, 'base_url');
        }
        return { input: key === undefined ? rest : { ...rest, key: this.options.cipher.encrypt(key), key_mask: maskSecret(key) } };
      }
      default:
        return { input };
    }
  }

  /** Whom a sign-in's password checks out for, and under which credentials (`session_epoch`). */
  private async signIn(input: unknown, address: string): Promise<{ user_id: number; session_epoch: number }> {
    const { username, password } = input as AdminInput<'user.login'>;
    const user = await this.options.signIn.verify(username, password, address);
    return { user_id: user.id, session_epoch: user.session_epoch };
  }
}
