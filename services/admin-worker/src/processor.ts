import { adminOperations, jobSchemaOf, parseOrThrow, type AdminJobPayload, type AdminResult } from '@gateway/contracts';
import type { JobContext } from '@gateway/queue';
import type { Store } from '@gateway/store';
import * as channels from './operations/channels.ts';
import * as sessions from './operations/sessions.ts';
import * as tokens from './operations/tokens.ts';
import * as users from './operations/users.ts';
import { requireRole } from './permissions.ts';

/**
 * Executes one management operation: validates the job's input (the operation's job schema,
 * which admits no password and no channel key in clear), checks the caller's role, and applies
 * the operation to the store.
 */
export async function runAdminOperation(store: Store, job: AdminJobPayload): Promise<AdminResult> {
  const spec = adminOperations[job.operation];
  if (!spec) throw new Error(`unknown admin operation ${String(job.operation)}`);
  const actor = requireRole(job.actor, spec.minRole);
  const input = parseOrThrow(jobSchemaOf(job.operation), job.input);
  const a = actor!;
  switch (job.operation) {
    case 'user.login': return { data: await users.login(store, input as never) };
    case 'user.self': return { data: await users.self(store, a) };
    case 'user.create': return { data: await users.createUser(store, a, input as never) };
    case 'user.update': return { data: await users.updateUser(store, a, input as never) };
    case 'user.list': return { data: await users.listUsers(store, a, input as never) };
    case 'user.get': return { data: await users.getUser(store, a, input as never) };
    case 'user.delete': return { data: await users.deleteUser(store, a, input as never) };
    case 'channel.create': return { data: await channels.createChannel(store, input as never) };
    case 'channel.update': return { data: await channels.updateChannel(store, input as never) };
    case 'channel.list': return { data: await channels.listChannels(store, input as never) };
    case 'channel.get': return { data: await channels.getChannel(store, input as never) };
    case 'channel.delete': return { data: await channels.deleteChannel(store, input as never) };
    case 'channel.disableTag': return { data: await channels.setTagStatus(store, input as never, 2) };
    case 'channel.enableTag': return { data: await channels.setTagStatus(store, input as never, 1) };
    case 'token.create': return { data: await tokens.createToken(store, a, input as never) };
    case 'token.update': return { data: await tokens.updateToken(store, a, input as never) };
    case 'token.list': return { data: await tokens.listTokens(store, a, input as never) };
    case 'token.get': return { data: await tokens.getToken(store, a, input as never) };
    case 'token.delete': return { data: await tokens.deleteToken(store, a, input as never) };
    case 'session.create': return { data: await sessions.createSession(store, input as never) };
    case 'session.delete': return { data: await sessions.deleteSession(store, input as never) };
  }
}

export function adminJobHandler(store: Store) {
  return (context: JobContext<AdminJobPayload>) => runAdminOperation(store, context.payload);
}
