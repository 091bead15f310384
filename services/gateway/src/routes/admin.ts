/**
 * The management API: each route names an admin operation; the ingress validates the input,
 * authenticates the caller, and runs the operation as a job on the admin queue.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { adminOperations, parseOrThrow, QueueName, type AdminJobPayload, type AdminOperationName, type AdminResult } from '@gateway/contracts';
import type { JobClient } from '@gateway/queue';
import type { UserStore } from '@gateway/store';
import type { AdminJobs } from '../admin-jobs.ts';
import { accessTokenHook } from '../auth/request-auth.ts';
import { clientGoneSignal } from '../client-signal.ts';

type InputSource = 'body' | 'query' | 'params' | 'none';

/** Each route's operation; the paths are under `/api`, the management plugin's prefix. */
const routes: [method: 'GET' | 'POST' | 'PUT' | 'DELETE', path: string, operation: AdminOperationName, input: InputSource][] = [
  ['POST', '/user/login', 'user.login', 'body'],
  ['GET', '/user/self', 'user.self', 'none'],
  ['POST', '/user/', 'user.create', 'body'],
  ['PUT', '/user/', 'user.update', 'body'],
  ['GET', '/user/', 'user.list', 'query'],
  ['GET', '/user/:id', 'user.get', 'params'],
  ['DELETE', '/user/:id', 'user.delete', 'params'],
  ['POST', '/channel/', 'channel.create', 'body'],
  ['PUT', '/channel/', 'channel.update', 'body'],
  ['GET', '/channel/', 'channel.list', 'query'],
  ['GET', '/channel/:id', 'channel.get', 'params'],
  ['DELETE', '/channel/:id', 'channel.delete', 'params'],
  ['POST', '/channel/tag/disabled', 'channel.disableTag', 'body'],
  ['POST', '/channel/tag/enabled', 'channel.enableTag', 'body'],
  ['POST', '/token/', 'token.create', 'body'],
  ['PUT', '/token/', 'token.update', 'body'],
  ['GET', '/token/', 'token.list', 'query'],
  ['GET', '/token/:id', 'token.get', 'params'],
  ['DELETE', '/token/:id', 'token.delete', 'params'],
];

export interface AdminRoutesOptions {
  jobs: JobClient;
  users: UserStore;
  /** Turns a validated input into its job (no secret in clear). */
  adminJobs: AdminJobs;
  timeoutMs: number;
  /** Management bodies are small: MANAGEMENT_BODY_LIMIT_BYTES. */
  bodyLimitBytes: number;
}

function inputOf(request: FastifyRequest, source: InputSource): unknown {
  if (source === 'body') return request.body;
  if (source === 'query') return { ...(request.query as object) };
  if (source === 'params') return { ...(request.params as object) };
  return {};
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The admin operation a management route runs. */
    operation?: AdminOperationName;
  }
}

const operationOf = (request: FastifyRequest) => request.routeOptions.config.operation!;

export function adminRoutes(app: FastifyInstance, options: AdminRoutesOptions): void {
  app.addHook('onRequest', accessTokenHook(options.users, (request) => adminOperations[operationOf(request)].minRole > 0));
  for (const [method, url, operation, source] of routes) {
    app.route({
      method,
      url,
      config: { operation },
      bodyLimit: options.bodyLimitBytes,
      handler: async (request: FastifyRequest) => runAdminOperation(options, request, operation, inputOf(request, source)),
    });
  }
}

/**
 * Runs one admin operation for the request's actor on the admin queue, in new-api's envelope:
 * the input validated by the operation's schema, its secrets made into their job form first.
 * The management API and the operations console both change things only through this.
 */
export async function runAdminOperation(
  options: Pick<AdminRoutesOptions, 'jobs' | 'adminJobs' | 'timeoutMs'>,
  request: FastifyRequest,
  operation: AdminOperationName,
  rawInput: unknown,
): Promise<{ success: true; message: ''; data: unknown }> {
  const spec = adminOperations[operation];
  const input = parseOrThrow(spec.input, rawInput);
  const prepared = await options.adminJobs.prepare(operation, input, request.ip);
  const payload: AdminJobPayload = { operation, actor: request.actor, input: prepared.input };
  const result = await options.jobs.request<AdminJobPayload, AdminResult>(QueueName.admin, payload, {
    requestId: request.id,
    timeoutMs: options.timeoutMs,
    signal: clientGoneSignal(request),
  });
  // The secret the gateway made (a token, a key) joins the answer here, having never left it.
  const data = prepared.reveal ? { ...(result.data as object), ...prepared.reveal } : result.data;
  return { success: true, message: '', data };
}
