/**
 * The gateway's half of a management operation: its input made into its job by the entry's
 * `prepare` (@gateway/admin-operations), so that no job or reply (and so nothing in Redis, its
 * append-only file or the dashboard) ever holds a secret in clear, and the job's run on the
 * admin queue. Sign-ins are checked here and the job only says whom to sign in; new access
 * tokens, API keys and dashboard sessions are made here, the job carrying only their digests,
 * and the secret goes from here straight into the answer; new passwords are hashed here; channel
 * keys are encrypted here, with a mask made for display.
 */
import { adminOperation, type AdminJobPayload, type AdminOperationName, type AdminResult, type PrepareTools } from '@gateway/admin-operations';
import type { KeyRateLimit } from '@gateway/admission';
import { badRequest, GatewayError, notFound, parseOrThrow, QueueName, Role, type Actor } from '@gateway/contracts';
import { baseUrlProblem, channelKeyProblem, type AddressPolicy } from '@gateway/providers';
import { forgetUser, highestUserIdOnRecord, orUnavailable, type Database } from '@gateway/database';
import type { Logger } from '@gateway/log';
import type { JobClient } from '@gateway/queue';
import { maskSecret, type ChannelKeyCipher, type ChannelStore } from '@gateway/store';
import type { PasswordLane } from '../auth/password-lane.ts';
import type { PasswordSignIn } from '../auth/password-sign-in.ts';

export interface AdminJobsOptions {
  signIn: PasswordSignIn;
  lane: PasswordLane;
  cipher: ChannelKeyCipher;
  /** Where an update's channel is read, for the type its new key is checked for. */
  channels: Pick<ChannelStore, 'get'>;
  addressPolicy: AddressPolicy;
  jobs: JobClient;
  timeoutMs: number;
  /** A common user's changes a minute (MANAGEMENT_CHANGES_PER_MINUTE), counted with `rateLimit`. */
  changesPerMinute: number;
  rateLimit: KeyRateLimit;
  /** PostgreSQL, whose rows' highest user id a new user is numbered above, and where a deleted user's files go; none without one. */
  database?: Database;
  log: Pick<Logger, 'info' | 'warn'>;
  /** Called once a change (any operation but a read) is applied: this gateway's caches are dropped before it answers. */
  changed?: () => void;
}

/** Who asks for an operation, and for which request. */
export interface AdminCall {
  actor: Actor | null;
  /** The client's address, for sign-in throttling. */
  address: string;
  requestId: string;
  /** Aborted when the client leaves: the job is removed if it has not started. */
  signal?: AbortSignal;
}

/** Operations that change no key, user limit or channel that a cache holds: a sign-in, a dashboard session. */
const SIGN_INS: ReadonlySet<AdminOperationName> = new Set(['user.login', 'session.create', 'session.delete']);

export class AdminJobs {
  private readonly options: AdminJobsOptions;
  private readonly tools: PrepareTools;

  constructor(options: AdminJobsOptions) {
    this.options = options;
    this.tools = {
      signIn: async (username, password, address) => {
        const user = await options.signIn.verify(username, password, address);
        return { user_id: user.id, session_epoch: user.session_epoch };
      },
      hashPassword: (password) => options.lane.hash(password),
      sealKey: (key) => ({ key: options.cipher.encrypt(key), key_mask: maskSecret(key) }),
      checkChannelKey: (key, type) => {
        const problem = channelKeyProblem(type, key);
        if (problem) throw badRequest(`invalid key: a ${type} channel's key ${problem}`, 'key');
      },
      channelType: async (id) => {
        const channel = await options.channels.get(id);
        if (!channel) throw notFound(`no channel with id ${id}`);
        return channel.type;
      },
      checkBaseUrl: async (baseUrl) => {
        const problem = baseUrl === undefined ? undefined : await baseUrlProblem(baseUrl, options.addressPolicy);
        if (problem) throw badRequest(`base_url may not point there: ${problem}`, 'base_url');
      },
      // Unreachable, the user is not made (503): its id could be one that owns old rows.
      highestUserIdOnRecord: async () => (options.database ? orUnavailable(highestUserIdOnRecord(options.database)) : 0),
      forgetUser: async (userId) => {
        if (!options.database) return;
        // The user is gone already: PostgreSQL away, its files and batches stay (said in the log).
        await forgetUser(options.database, userId).then(
          (forgotten) => options.log.info({ userId, ...forgotten }, "a deleted user's files and batches removed"),
          (error: unknown) => options.log.warn({ userId, reason: (error as Error).message }, "a deleted user's files and batches not removed (PostgreSQL unavailable?)"),
        );
      },
    };
  }

  /**
   * Runs an operation: its input validated by its schema (a 400 naming the field), prepared,
   * then run on the admin queue; the answer is the worker's, with the secret the gateway made
   * (a token, a key, a session) joined to it here, having never left the gateway.
   */
  async run(operation: AdminOperationName, rawInput: unknown, call: AdminCall): Promise<unknown> {
    const { input: schema, prepare, after, route } = adminOperation(operation);
    const input = parseOrThrow(schema, rawInput);
    // A common user's changes are counted (a create or a delete leaves its job's record in Redis a while);
    // reading is not, and administrators are not.
    if (call.actor && call.actor.role < Role.admin && route?.method !== 'GET') await this.options.rateLimit.checkChanges(call.actor.id, this.options.changesPerMinute);
    const prepared = prepare ? await prepare(input, this.tools, call.address) : { input, reveal: undefined };
    const payload: AdminJobPayload = { operation, actor: call.actor, input: prepared.input };
    const result = await this.options.jobs.request<AdminJobPayload, AdminResult>(QueueName.admin, payload, {
      requestId: call.requestId,
      timeoutMs: this.options.timeoutMs,
      signal: call.signal,
    }).catch(async (error: unknown) => {
      if (after && error instanceof GatewayError && error.status === 404) await after(prepared.input, this.tools);
      throw error;
    });
    await after?.(prepared.input, this.tools);
    if (route?.method !== 'GET' && !SIGN_INS.has(operation)) this.options.changed?.();
    return prepared.reveal ? { ...(result.data as object), ...prepared.reveal } : result.data;
  }
}
