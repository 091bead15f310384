/**
 * The management API under `/api`, in new-api's `{success, message, data}` envelope: its errors
 * and unknown `/api` paths answer in that envelope; routes whose operation needs a signed-in
 * caller take an access token. Users, channels and keys are operations on the admin queue
 * (`management/admin-routes.ts`); batches and the request log are read from PostgreSQL by the gateway
 * (`management/admin-batch-routes.ts`, `management/request-log-routes.ts`).
 */
import type { FastifyInstance } from 'fastify';
import type { BatchOverview } from '../batches/batch-overview.ts';
import { adminFormat, useErrorFormat } from '../http/error-formats.ts';
import { adminBatchRoutes } from '../management/admin-batch-routes.ts';
import { adminRoutes, type AdminRoutesOptions } from '../management/admin-routes.ts';
import { requestLogRoutes } from '../management/request-log-routes.ts';
import type { Database } from '@gateway/database';

export async function managementApi(app: FastifyInstance, options: AdminRoutesOptions & { batches: BatchOverview; database?: Database }): Promise<void> {
  useErrorFormat(app, adminFormat);
  // Each family's access-token hook in a context of its own, so an unknown /api path is a 404, not a 401.
  await app.register(async (routes) => adminRoutes(routes, options));
  await app.register(async (routes) => adminBatchRoutes(routes, { users: options.users, overview: options.batches }));
  await app.register(async (routes) => requestLogRoutes(routes, { users: options.users, database: options.database }));
}
