/**
 * The admin queue's contract: each management operation by name, the schema of its input
 * and the least role that may call it. The ingress maps routes onto these names; the admin
 * worker executes them.
 */
import { z } from 'zod';
import type { Actor } from './records.ts';
import * as s from './schemas.ts';

const none = z.strictObject({});

export const adminOperations = {
  'user.login': { input: s.loginBody, minRole: 0 },
  'user.self': { input: none, minRole: 1 },
  'user.create': { input: s.createUserBody, minRole: 10 },
  'user.update': { input: s.updateUserBody, minRole: 10 },
  'user.list': { input: s.listUsersQuery, minRole: 10 },
  'user.get': { input: s.idParam, minRole: 10 },
  'user.delete': { input: s.idParam, minRole: 10 },
  'channel.create': { input: s.createChannelBody, minRole: 10 },
  'channel.update': { input: s.updateChannelBody, minRole: 10 },
  'channel.list': { input: s.listChannelsQuery, minRole: 10 },
  'channel.get': { input: s.idParam, minRole: 10 },
  'channel.delete': { input: s.idParam, minRole: 10 },
  'channel.disableTag': { input: s.tagBody, minRole: 10 },
  'channel.enableTag': { input: s.tagBody, minRole: 10 },
  'token.create': { input: s.createTokenBody, minRole: 1 },
  'token.update': { input: s.updateTokenBody, minRole: 1 },
  'token.list': { input: s.listTokensQuery, minRole: 1 },
  'token.get': { input: s.idParam, minRole: 1 },
  'token.delete': { input: s.idParam, minRole: 1 },
  'session.create': { input: s.loginBody, minRole: 0 },
  'session.delete': { input: s.sessionBody, minRole: 0 },
} as const satisfies Record<string, { input: z.ZodType; minRole: number }>;

export type AdminOperationName = keyof typeof adminOperations;
export type AdminInput<N extends AdminOperationName> = z.infer<(typeof adminOperations)[N]['input']>;

/** Payload of a job on the admin queue. `input` is the caller's raw body/query, re-validated by the worker. */
export interface AdminJobPayload {
  operation: AdminOperationName;
  actor: Actor | null;
  input: unknown;
}

/** What the admin worker sends back: the envelope's `data`. */
export interface AdminResult {
  data: unknown;
}
