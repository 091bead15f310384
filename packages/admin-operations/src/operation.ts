/**
 * What an admin operation is: one entry that holds its route, its schemas, the least role that
 * may call it, what the gateway does to its input before it becomes a job, and what the admin
 * worker does with the job. The gateway reads the first four and runs `prepare`; the admin
 * worker reads the job schema and the role and runs `apply`. Neither calls the other's half.
 */
import type { z } from 'zod';
import type { Actor, ChannelType, Role } from '@gateway/contracts';
import type { Store, WriteOnce } from '@gateway/store';

/** Where a route's input comes from: the JSON body, the query string, the path's `:id`, or nowhere. */
export type InputSource = 'body' | 'query' | 'params' | 'none';

/** A route under `/api`, the management API's prefix. */
export interface AdminRoute {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  path: string;
  from: InputSource;
}

/** The least role of an operation anyone may call, signed in or not (signing in itself). */
export const ANYONE = 0;
/** The least role that may call an operation: `ANYONE`, or a `Role`. */
export type MinRole = typeof ANYONE | Role;

/**
 * What the gateway lends an operation's `prepare`: the steps that need its secrets or its state,
 * so that the job carries a password's hash, a key encrypted, a sign-in checked, never the secret.
 */
export interface PrepareTools {
  /** Checks a password (throttled by `address`): whom it signs in, under which credentials. */
  signIn(username: string, password: string, address: string): Promise<{ user_id: number; session_epoch: number }>;
  /** scrypt, on the gateway's bounded lane. */
  hashPassword(password: string): Promise<string>;
  /** A channel key encrypted for the store, and its mask for display. */
  sealKey(key: string): { key: string; key_mask: string };
  /**
   * Refuses a channel key its type's provider cannot read (a structured credential that is no
   * JSON, lacks a field, has one of the wrong type; a plain key where the provider takes none):
   * a 400 naming the problem, never the key's values.
   */
  checkChannelKey(key: string, type: ChannelType): void;
  /** The type of the channel `id` as stored (a 404 without one): what an update's new key is checked for. */
  channelType(id: number): Promise<ChannelType>;
  /** Refuses a channel address the gateway will not call (its own Redis, metadata services, …). */
  checkBaseUrl(baseUrl: string | undefined): Promise<void>;
  /** The highest user id that owns rows in PostgreSQL (0 without one): a new user is numbered above it. */
  highestUserIdOnRecord(): Promise<number>;
  /** A deleted user's files and batches removed from PostgreSQL (its open batches cancelled). */
  forgetUser(userId: number): Promise<void>;
}

/** A job's input, and what the gateway adds to the worker's answer: the secret it made, which never reaches Redis. */
export interface Prepared<Job> {
  input: Job;
  reveal?: Record<string, string>;
}

/**
 * One run of an operation in the admin worker: the store, who runs it (`null` only where the
 * least role is 0, the sign-ins), the job's input as its job schema parsed it, and `once`, which
 * keys the operation's write by its job, so that a job run again after its worker was killed
 * writes nothing twice: creations return what the first run made, deletions succeed, a new
 * password bumps no second epoch.
 */
export interface OperationRun<Input, R extends MinRole> {
  store: Store;
  actor: R extends typeof ANYONE ? null : Actor;
  input: Input;
  once: WriteOnce;
}

export interface AdminOperation<I extends z.ZodType = z.ZodType, J extends z.ZodType = I, R extends MinRole = MinRole> {
  route?: AdminRoute;
  /** What the caller sends. */
  input: I;
  /** What the admin queue carries, when it differs from the input (a secret made safe). */
  job?: J;
  minRole: R;
  /** In the gateway: the input made into its job. Without it, the input is the job. */
  prepare?: (input: z.output<I>, tools: PrepareTools, address: string) => Promise<Prepared<z.input<J>>>;
  /** In the admin worker: the operation applied to the store; its answer is the reply's `data`. */
  apply: (run: OperationRun<z.output<J>, R>) => Promise<unknown>;
  /**
   * In the gateway, once the worker has applied it: what follows in PostgreSQL, which the admin
   * worker does not reach. Run also when the worker found nothing to apply it to (404), so that
   * a step cut short (its gateway stopped between the two) runs when the call is made again.
   */
  after?: (input: z.output<J>, tools: PrepareTools) => Promise<void>;
}

/** An entry, typed from its own schemas and role. */
export function operation<I extends z.ZodType, J extends z.ZodType = I, R extends MinRole = MinRole>(spec: AdminOperation<I, J, R>): AdminOperation<I, J, R> {
  return spec;
}

export const get = (path: string, from: InputSource): AdminRoute => ({ method: 'GET', path, from });
export const post = (path: string): AdminRoute => ({ method: 'POST', path, from: 'body' });
export const put = (path: string): AdminRoute => ({ method: 'PUT', path, from: 'body' });
export const remove = (path: string): AdminRoute => ({ method: 'DELETE', path, from: 'params' });
