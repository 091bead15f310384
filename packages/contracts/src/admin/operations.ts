/**
 * The admin queue's contract: each management operation by name, the schema of the caller's
 * input, the schema of the job the gateway enqueues for it when the two differ, and the least
 * role that may call it. The ingress maps routes onto these names, validates the input and turns
 * it into the job (checking a password, hashing a new one, encrypting a channel key, so that no
 * job holds a secret in clear); the admin worker validates the job and executes it.
 */
import { z } from 'zod';
import type { Actor } from './records.ts';
import * as s from './schemas.ts';

const none = z.strictObject({});

export const adminOperations = {
  'user.login': { input: s.loginBody, job: s.loginJob, minRole: 0 },
  'user.self': { input: none, minRole: 1 },
  'user.create': { input: s.createUserBody, job: s.createUserJob, minRole: 10 },
  'user.update': { input: s.updateUserBody, job: s.updateUserJob, minRole: 10 },
  'user.list': { input: s.listUsersQuery, minRole: 10 },
  'user.get': { input: s.idParam, minRole: 10 },
  'user.delete': { input: s.idParam, minRole: 10 },
  'channel.create': { input: s.createChannelBody, job: s.createChannelJob, minRole: 10 },
  'channel.update': { input: s.updateChannelBody, job: s.updateChannelJob, minRole: 10 },
  'channel.list': { input: s.listChannelsQuery, minRole: 10 },
  'channel.get': { input: s.idParam, minRole: 10 },
  'channel.delete': { input: s.idParam, minRole: 10 },
  'channel.disableTag': { input: s.tagBody, minRole: 10 },
  'channel.enableTag': { input: s.tagBody, minRole: 10 },
  'token.create': { input: s.createTokenBody, job: s.createTokenJob, minRole: 1 },
  'token.update': { input: s.updateTokenBody, minRole: 1 },
  'token.list': { input: s.listTokensQuery, minRole: 1 },
  'token.get': { input: s.idParam, minRole: 1 },
  'token.delete': { input: s.idParam, minRole: 1 },
  'session.create': { input: s.loginBody, job: s.sessionJob, minRole: 0 },
  'session.delete': { input: s.sessionBody, job: s.sessionDeleteJob, minRole: 0 },
} as const satisfies Record<string, { input: z.ZodType; job?: z.ZodType; minRole: number }>;

export type AdminOperationName = keyof typeof adminOperations;
type Spec<N extends AdminOperationName> = (typeof adminOperations)[N];
/** What the caller sends for an operation. */
export type AdminInput<N extends AdminOperationName> = z.infer<Spec<N>['input']>;
/** What the admin worker receives for an operation: the job schema's, or the caller's input. */
export type AdminJobInput<N extends AdminOperationName> = z.infer<Spec<N> extends { job: infer J extends z.ZodType } ? J : Spec<N>['input']>;

/** The schema a job's input must pass in the admin worker. */
export function jobSchemaOf(operation: AdminOperationName): z.ZodType {
  const spec = adminOperations[operation] as { input: z.ZodType; job?: z.ZodType };
  return spec.job ?? spec.input;
}

/** Payload of a job on the admin queue. `input` is what the gateway prepared, re-validated by the worker. */
export interface AdminJobPayload {
  operation: AdminOperationName;
  actor: Actor | null;
  input: unknown;
}

/** What the admin worker sends back: the envelope's `data`. */
export interface AdminResult {
  data: unknown;
}
