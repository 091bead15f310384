/**
 * The management operations: each one entry with its route on the management API, its schemas,
 * the least role that may call it, the gateway's preparation of its job (no secret in clear) and
 * the admin worker's apply. The gateway and the admin worker each take their half.
 */
export { adminOperation, adminOperations, jobSchemaOf, type AdminJobPayload, type AdminOperationName, type AdminResult } from './operations.ts';
export { ANYONE } from './operation.ts';
export type { AdminOperation, AdminRoute, InputSource, MinRole, OperationRun, Prepared, PrepareTools } from './operation.ts';
export { requireRole } from './permissions.ts';
