/**
 * The OpenAI Files and Batch APIs' wire objects. The model endpoints a batch may name, each with
 * its queue, its line's schema and its worst case, are the endpoint table's (`batchEndpoints`,
 * model-endpoints.ts), so a batch line is checked and held exactly like a live request.
 */
import { z } from 'zod';
import { batchEndpoints } from '../model-endpoints.ts';

/**
 * Text stored in PostgreSQL that must come back exactly as it was sent (a line's custom_id,
 * batch metadata): PostgreSQL's text cannot hold U+0000, so it is refused here, not changed.
 */
const storedExactly = (schema: z.ZodString) => schema.refine((text) => !text.includes('\u0000'), { message: 'must not contain the character U+0000' });

export const batchCreateSchema = z.strictObject({
  input_file_id: z.string().min(1).max(128),
  endpoint: z.string().refine((e) => e in batchEndpoints, { message: `must be one of ${Object.keys(batchEndpoints).join(', ')}` }),
  completion_window: z.literal('24h'),
  // OpenAI's bound: 16 pairs, keys up to 64 characters, values up to 512.
  metadata: z.record(storedExactly(z.string().max(64)), storedExactly(z.string().max(512))).refine((m) => Object.keys(m).length <= 16, { message: 'at most 16 pairs' }).nullish(),
  output_expires_after: z.unknown().optional(),
});
export type BatchCreate = z.infer<typeof batchCreateSchema>;

/** One line of a batch input file. */
export const batchInputLineSchema = z.strictObject({
  custom_id: storedExactly(z.string().min(1).max(512)),
  method: z.literal('POST'),
  url: z.string(),
  body: z.record(z.string(), z.unknown()),
});
export type BatchInputLine = z.infer<typeof batchInputLineSchema>;

export const BATCH_STATUSES = ['validating', 'failed', 'in_progress', 'finalizing', 'completed', 'expired', 'cancelling', 'cancelled'] as const;
export type BatchStatus = (typeof BATCH_STATUSES)[number];
/** The statuses of a batch that has not ended yet: a batch worker holds it, or will take it. */
export const RUNNING_BATCH_STATUSES: readonly BatchStatus[] = ['validating', 'in_progress', 'finalizing', 'cancelling'];

/** A line that failed validation, named by its line number (1-based, as OpenAI's). */
export interface BatchLineError {
  code: string;
  message: string;
  param: string | null;
  line: number | null;
}

/** OpenAI's Batch object. */
export interface BatchObject {
  id: string;
  object: 'batch';
  endpoint: string;
  errors: { object: 'list'; data: BatchLineError[] } | null;
  input_file_id: string;
  completion_window: string;
  status: BatchStatus;
  output_file_id: string | null;
  error_file_id: string | null;
  created_at: number;
  in_progress_at: number | null;
  expires_at: number | null;
  finalizing_at: number | null;
  completed_at: number | null;
  failed_at: number | null;
  expired_at: number | null;
  cancelling_at: number | null;
  cancelled_at: number | null;
  request_counts: { total: number; completed: number; failed: number };
  metadata: Record<string, string> | null;
}

/** OpenAI's File object. */
export interface FileObject {
  id: string;
  object: 'file';
  bytes: number;
  created_at: number;
  filename: string;
  purpose: string;
  status: 'processed';
  expires_at: number | null;
  status_details: null;
}

/** A batch output or error file line (OpenAI's format). */
export interface BatchOutputLine {
  id: string;
  custom_id: string;
  response: { status_code: number; request_id: string; body: unknown } | null;
  error: { code: string; message: string } | null;
}
