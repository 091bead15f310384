/**
 * The OpenAI embeddings wire format (`POST /v1/embeddings`): the request with OpenAI's bounds (a
 * 400 names the field), and the response. Fields the schema does not know pass to the upstream.
 */
import { z } from 'zod';
import { modelField } from '../validation.ts';
import { checkSchedulingFields } from '../upstream-scheduling.ts';

/** OpenAI's own bound: at most 2,048 inputs a request. */
export const MAX_EMBEDDING_INPUTS = 2048;

const isTokenId = (value: unknown) => Number.isInteger(value) && (value as number) >= 0;
const isTokenIds = (value: unknown): value is number[] => Array.isArray(value) && value.length > 0 && value.every(isTokenId);

/** Token ids are checked in one plain loop, not element by element by zod (see completionPrompt). */
export const embeddingInput = z.union([
  z.string().min(1, 'must not be empty'),
  z.array(z.string().min(1, 'must not hold an empty string')).min(1, 'must not be an empty array').max(MAX_EMBEDDING_INPUTS, `may hold at most ${MAX_EMBEDDING_INPUTS} inputs`),
  z.custom<number[]>(isTokenIds),
  z.custom<number[][]>((value) => Array.isArray(value) && value.length > 0 && value.length <= MAX_EMBEDDING_INPUTS && value.every(isTokenIds)),
], { error: `must be a string, an array of 1 to ${MAX_EMBEDDING_INPUTS} strings, an array of token ids, or an array of token-id arrays` });

const optional = <S extends z.ZodType>(schema: S) => schema.nullable().optional();

export const embeddingRequestSchema = z.looseObject({
  model: modelField,
  input: embeddingInput,
  encoding_format: optional(z.enum(['float', 'base64'])),
  dimensions: optional(z.number().int().min(1)),
  user: optional(z.string()),
}).superRefine(checkSchedulingFields);

export type EmbeddingRequest = z.infer<typeof embeddingRequestSchema>;

export interface Embedding {
  object: 'embedding';
  index: number;
  /** Floats, or (encoding_format base64) their little-endian float32 bytes in base64. */
  embedding: number[] | string;
}

export interface EmbeddingResponse {
  object: 'list';
  data: Embedding[];
  model: string;
  usage: { prompt_tokens: number; total_tokens: number };
  [field: string]: unknown;
}

/** The inputs as a list: one string or token-id list an embedding. */
export function embeddingInputs(input: EmbeddingRequest['input']): (string | number[])[] {
  if (typeof input === 'string') return [input];
  if (input.length > 0 && typeof input[0] === 'number') return [input as number[]];
  return input as (string | number[])[];
}

/** Floats as OpenAI's base64: their little-endian float32 bytes. */
export function floatsToBase64(values: readonly number[]): string {
  const bytes = Buffer.alloc(values.length * 4);
  values.forEach((value, i) => bytes.writeFloatLE(value, i * 4));
  return bytes.toString('base64');
}

/** OpenAI's base64 as floats (little-endian float32); undefined for what is not a whole number of them. */
export function base64ToFloats(base64: string): number[] | undefined {
  const bytes = Buffer.from(base64, 'base64');
  if (bytes.length % 4 !== 0) return undefined;
  const values = new Array<number>(bytes.length / 4);
  for (let i = 0; i < values.length; i++) values[i] = bytes.readFloatLE(i * 4);
  return values;
}
