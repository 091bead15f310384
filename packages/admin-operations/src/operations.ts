/**
 * Every management operation by name, each one entry (operation.ts): the admin queue's contract.
 * The gateway mounts the routes, validates the input and prepares the job (admin-jobs.ts); the
 * admin worker checks the role, validates the job and applies it (its processor.ts).
 */
import type { z } from 'zod';
import type { Actor } from '@gateway/contracts';
import { channelOperations } from './channels.ts';
import type { AdminOperation, MinRole } from './operation.ts';
import { priceOperations } from './prices.ts';
import { sessionOperations } from './sessions.ts';
import { tokenOperations } from './tokens.ts';
import { userOperations } from './users.ts';

export const adminOperations = { ...userOperations, ...channelOperations, ...tokenOperations, ...sessionOperations, ...priceOperations };

export type AdminOperationName = keyof typeof adminOperations;

/**
 * An operation by name, typed only as an operation: where the name is a value, not a type (the
 * gateway's routes, the worker's job), each part is then validated before it is used.
 */
export function adminOperation(name: AdminOperationName): AdminOperation<z.ZodType, z.ZodType, MinRole> {
  return adminOperations[name] as unknown as AdminOperation<z.ZodType, z.ZodType, MinRole>;
}

/** The schema a job's input must pass in the admin worker. */
export function jobSchemaOf(name: AdminOperationName): z.ZodType {
  const entry = adminOperation(name);
  return entry.job ?? entry.input;
}

/** Payload of a job on the admin queue. `input` is what the gateway prepared, validated again by the worker. */
export interface AdminJobPayload {
  operation: AdminOperationName;
  actor: Actor | null;
  input: unknown;
}

/** What the admin worker sends back: the envelope's `data`. */
export interface AdminResult {
  data: unknown;
}
