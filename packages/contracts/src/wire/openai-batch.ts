/**
 * The OpenAI Files and Batch APIs' wire objects, and the model endpoints a batch may name: each
 * with its queue, the schema of a line's body (the very schema the live route validates with)
 * and its worst case, so a batch line is checked and held exactly like a live request.
 */
import { z } from 'zod';
import { QueueName } from '../queues.ts';
import type { ModelOperation } from '../model-jobs.ts';
import { chatRequestSchema } from './openai-chat.ts';
import { completionRequestSchema } from './openai-completion.ts';
import { embeddingRequestSchema } from './openai-embeddings.ts';
import { chatWorstCase, completionWorstCase, embeddingWorstCase } from '../worst-case-usage.ts';
import { responsesBatchLineSchema, responsesWorstCase, type ResponsesRequest } from './openai-responses.ts';

/**
 * An OpenAI model endpoint, as its live route and a batch line both run it: its queue, the
 * operation its job asks for, its body schema and the most quota a request may use.
 */
export interface OpenAIEndpoint {
  queue: QueueName;
  operation: Extract<ModelOperation, 'completions' | 'chat' | 'embeddings'>;
  /**
   * A body's schema. It gives a valid body back as it came (loose objects, no defaults, no
   * transforms: openai-endpoints.test.ts), so the body's JSON as received may stand for the
   * parsed value in its job.
   */
  schema: z.ZodType<{ model: string; stream?: boolean | null }>;
  worstCase(body: unknown): number;
  /** Whether `stream: true` is served (as server-sent events). */
  streams: boolean;
}

/** Every OpenAI model endpoint, by path: one entry an endpoint, for the routes and for batches. */
export const openaiEndpoints = {
  '/v1/completions': {
    queue: QueueName.completion,
    operation: 'completions',
    schema: completionRequestSchema,
    worstCase: (body) => completionWorstCase(body as z.infer<typeof completionRequestSchema>),
    streams: true,
  },
  '/v1/chat/completions': {
    queue: QueueName.completion,
    operation: 'chat',
    schema: chatRequestSchema,
    worstCase: (body) => chatWorstCase(body as z.infer<typeof chatRequestSchema>),
    streams: true,
  },
  '/v1/embeddings': {
    queue: QueueName.completion,
    operation: 'embeddings',
    schema: embeddingRequestSchema,
    worstCase: (body) => embeddingWorstCase(body as z.infer<typeof embeddingRequestSchema>),
    streams: false,
  },
} satisfies Record<string, OpenAIEndpoint>;

/** A model endpoint a batch may run: an OpenAI one, or the Responses door (its own route, responses.ts in the gateway). */
export interface BatchEndpoint extends Omit<OpenAIEndpoint, 'operation'> {
  operation: OpenAIEndpoint['operation'] | 'responses';
}

/** The model endpoints a batch may run: every OpenAI one, and /v1/responses with lines that stand alone. */
export const batchEndpoints: Record<string, BatchEndpoint> = {
  ...openaiEndpoints,
  '/v1/responses': {
    queue: QueueName.completion,
    operation: 'responses',
    schema: responsesBatchLineSchema,
    worstCase: (body) => responsesWorstCase(body as ResponsesRequest),
    streams: true,
  },
};

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
