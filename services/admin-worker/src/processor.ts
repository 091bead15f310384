import { adminOperations, ChannelStatus, jobSchemaOf, parseOrThrow, type Actor, type AdminJobInput, type AdminJobPayload, type AdminOperationName, type AdminResult } from '@gateway/contracts';
import type { JobContext } from '@gateway/queue';
import { writeOnce, type Store, type WriteOnce } from '@gateway/store';
import * as channels from './operations/channels.ts';
import * as sessions from './operations/sessions.ts';
import * as tokens from './operations/tokens.ts';
import * as users from './operations/users.ts';
import { requireRole } from './permissions.ts';

/**
 * What each management operation does, by name: the other half of `adminOperations` (the
 * contract: input schema, job schema, least role), which the gateway's routes read too. `actor`
 * is set for every operation whose least role is above 0. `once` keys the operation's write by
 * its job, so that a job run again after its worker was killed writes nothing twice: creations
 * return what the first run made, deletions succeed, a new password bumps no second epoch.
 */
type Handler<N extends AdminOperationName> = (store: Store, actor: Actor | null, input: AdminJobInput<N>, once: WriteOnce) => Promise<unknown>;

const handlers: { [N in AdminOperationName]: Handler<N> } = {
  'user.login': (store, _actor, input) => users.login(store, input),
  'user.self': (store, actor) => users.self(store, actor!),
  'user.create': (store, actor, input, once) => users.createUser(store, actor!, input, once),
  'user.update': (store, actor, input, once) => users.updateUser(store, actor!, input, once),
  'user.list': (store, actor, input) => users.listUsers(store, actor!, input),
  'user.get': (store, actor, input) => users.getUser(store, actor!, input),
  'user.delete': (store, actor, input, once) => users.deleteUser(store, actor!, input, once),
  'channel.create': (store, _actor, input, once) => channels.createChannel(store, input, once),
  'channel.update': (store, _actor, input) => channels.updateChannel(store, input),
  'channel.list': (store, _actor, input) => channels.listChannels(store, input),
  'channel.get': (store, _actor, input) => channels.getChannel(store, input),
  'channel.delete': (store, _actor, input, once) => channels.deleteChannel(store, input, once),
  'channel.disableTag': (store, _actor, input) => channels.setTagStatus(store, input, ChannelStatus.manuallyDisabled),
  'channel.enableTag': (store, _actor, input) => channels.setTagStatus(store, input, ChannelStatus.enabled),
  'token.create': (store, actor, input, once) => tokens.createToken(store, actor!, input, once),
  'token.update': (store, actor, input) => tokens.updateToken(store, actor!, input),
  'token.list': (store, actor, input) => tokens.listTokens(store, actor!, input),
  'token.get': (store, actor, input) => tokens.getToken(store, actor!, input),
  'token.delete': (store, actor, input, once) => tokens.deleteToken(store, actor!, input, once),
  'session.create': (store, _actor, input) => sessions.createSession(store, input),
  'session.delete': (store, _actor, input) => sessions.deleteSession(store, input),
};

/**
 * Executes one management operation: validates the job's input (the operation's job schema,
 * which admits no password and no channel key in clear), checks the caller's role, and applies
 * the operation to the store.
 */
export async function runAdminOperation(store: Store, job: AdminJobPayload, once: WriteOnce): Promise<AdminResult> {
  const spec = adminOperations[job.operation];
  if (!spec) throw new Error(`unknown admin operation ${String(job.operation)}`);
  const actor = requireRole(job.actor, spec.minRole);
  const input = parseOrThrow(jobSchemaOf(job.operation), job.input);
  // The one place the operation's name and its input's type meet: `handlers` is typed per name.
  const handler = handlers[job.operation] as Handler<AdminOperationName>;
  return { data: await handler(store, actor, input as AdminJobInput<AdminOperationName>, once) };
}

export function adminJobHandler(store: Store) {
  return (context: JobContext<AdminJobPayload>) => runAdminOperation(store, context.payload, writeOnce(context.jobId, context.deadline));
}
