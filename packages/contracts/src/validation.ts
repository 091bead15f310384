import { z } from 'zod';
import { badRequest, type GatewayError } from './errors.ts';

/** Dotted path of a zod issue, e.g. `generationConfig.speechConfig.voiceConfig`. */
export function issuePath(path: readonly PropertyKey[]): string {
  return path
    .map((part, i) => (typeof part === 'number' ? `[${part}]` : (i === 0 ? '' : '.') + String(part)))
    .join('');
}

/** Turns the first zod issue into a 400 that names the field at fault. */
export function toBadRequest(error: z.ZodError, prefix = ''): GatewayError {
  const issue = error.issues[0]!;
  const join = (field: string) => (prefix && field ? `${prefix}.${field}` : prefix || field);
  if (issue.code === 'unrecognized_keys') {
    const field = join([issuePath(issue.path), issue.keys[0]].filter(Boolean).join('.'));
    return badRequest(`unknown field: ${field}`, field);
  }
  const field = join(issuePath(issue.path));
  if (!field) return badRequest(`invalid body: ${issue.message}`, null);
  return badRequest(`invalid ${field}: ${issue.message}`, field);
}

/** Parses with a schema or throws a 400 naming the field. */
export function parseOrThrow<S extends z.ZodType>(schema: S, value: unknown, prefix = ''): z.infer<S> {
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw toBadRequest(parsed.error, prefix);
  return parsed.data;
}

/** The largest integer PostgreSQL's `integer` (int4) holds: ids, and counts compared with them. */
export const INT4_MAX = 2_147_483_647;

/** The longest model name a request may ask for: far past any real one (which stay under 100). */
export const MAX_MODEL_NAME_CHARS = 256;

/**
 * A request's `model`, on every model route: a name of at most MAX_MODEL_NAME_CHARS characters.
 * 8,000 characters overflowed the request log's index on the model, and an attacker's rows hid
 * themselves while every other tenant's waited behind them.
 */
export const modelField = z
  .string({ error: 'is required and must be a string' })
  .min(1, 'must not be empty')
  .max(MAX_MODEL_NAME_CHARS, `must be at most ${MAX_MODEL_NAME_CHARS} characters`);
