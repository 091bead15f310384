import type { z } from 'zod';
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
