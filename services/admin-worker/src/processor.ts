import { adminOperation, adminOperations, jobSchemaOf, requireRole, type AdminJobPayload, type AdminResult } from '@gateway/admin-operations';
import { parseOrThrow } from '@gateway/contracts';
import type { JobContext } from '@gateway/queue';
import { writeOnce, type Store, type WriteOnce } from '@gateway/store';

/**
 * Executes one management operation, the admin worker's half of its entry: checks the caller's
 * role, validates the job's input (the operation's job schema, which admits no password and no
 * channel key in clear), and applies the operation to the store.
 */
export async function runAdminOperation(store: Store, job: AdminJobPayload, once: WriteOnce): Promise<AdminResult> {
  if (!Object.hasOwn(adminOperations, job.operation)) throw new Error(`unknown admin operation ${String(job.operation)}`);
  const entry = adminOperation(job.operation);
  const actor = requireRole(job.actor, entry.minRole);
  const input = parseOrThrow(jobSchemaOf(job.operation), job.input);
  return { data: await entry.apply({ store, actor, input, once }) };
}

export function adminJobHandler(store: Store) {
  return (context: JobContext<AdminJobPayload>) => runAdminOperation(store, context.payload, writeOnce(context.jobId, context.deadline));
}
