/**
 * The management API: every admin operation whose entry has a route (@gateway/admin-operations),
 * mounted under `/api`; the ingress validates the input, authenticates the caller, and runs the
 * operation as a job on the admin queue.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { adminOperation, adminOperations, ANYONE, type AdminOperationName, type InputSource } from '@gateway/admin-operations';
import type { UserStore } from '@gateway/store';
import type { AdminJobs } from './admin-jobs.ts';
import { accessTokenHook } from '../auth/request-auth.ts';
import { clientGoneSignal } from '../http/client-signal.ts';

export interface AdminRoutesOptions {
  users: UserStore;
  /** Prepares an operation's job (no secret in clear) and runs it on the admin queue. */
  adminJobs: AdminJobs;
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
  app.addHook('onRequest', accessTokenHook(options.users, (request) => adminOperation(operationOf(request)).minRole !== ANYONE));
  for (const operation of Object.keys(adminOperations) as AdminOperationName[]) {
    const { route } = adminOperation(operation);
    if (!route) continue;
    const { method, path, from } = route;
    app.route({
      method,
      url: path,
      config: { operation },
      bodyLimit: options.bodyLimitBytes,
      handler: async (request: FastifyRequest) => answerAdminOperation(options.adminJobs, request, operation, inputOf(request, from)),
    });
  }
}

/**
 * Runs one admin operation for the request's actor on the admin queue, in new-api's envelope. The management API and the operations console
 * both change things only through this.
 */
export async function answerAdminOperation(
  adminJobs: AdminJobs,
  request: FastifyRequest,
  operation: AdminOperationName,
  rawInput: unknown,
): Promise<{ success: true; message: ''; data: unknown }> {
  const data = await adminJobs.run(operation, rawInput, {
    actor: request.actor, address: request.ip, requestId: request.id, signal: clientGoneSignal(request),
  });
  return { success: true, message: '', data };
}
