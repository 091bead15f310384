/**
 * The management API under `/api`, in new-api's `{success, message, data}` envelope: its errors
 * and unknown `/api` paths answer in that envelope; routes whose operation needs a signed-in
 * caller take an access token (`routes/admin.ts`).
 */
import type { FastifyInstance } from 'fastify';
import { adminFormat, useErrorFormat } from '../error-formats.ts';
import { adminRoutes, type AdminRoutesOptions } from '../routes/admin.ts';

export async function managementApi(app: FastifyInstance, options: AdminRoutesOptions): Promise<void> {
  useErrorFormat(app, adminFormat);
  // The access-token hook in a context of its own, so an unknown /api path is a 404, not a 401.
  await app.register(async (routes) => adminRoutes(routes, options));
}
