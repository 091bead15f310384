import { batchEndpoints, batchInputLineSchema, GatewayError, jsonShapeProblem, parseOrThrow, type BatchLineError } from '@gateway/contracts';
import { mayUseModel, type KeyHolder } from '@gateway/admission';
import type { BatchRuns, BatchRow } from '@gateway/database';

/** Most bad lines named in a failed batch's `errors`. */
const MAX_NAMED_ERRORS = 1000;

const lineError = (line: number, code: string, message: string, param: string | null = null): BatchLineError => ({ code, message, param, line });

/**
 * Validates a batch's input file line by line, as the live route would validate each request
 * (the same schema, the key's models), and writes the good lines as the batch's lines. Any bad
 * line fails the whole batch, every bad line named by its number (as OpenAI does).
 */
export async function validateLines(runs: BatchRuns, batch: BatchRow, holder: KeyHolder): Promise<{ total: number } | { errors: BatchLineError[] }> {
  const endpoint = batchEndpoints[batch.endpoint]!;
  const errors: BatchLineError[] = [];
  const customIds = new Set<string>();
  let total = 0;
  for await (const page of runs.inputLines(batch.input_file_id)) {
    const good: { line: number; customId: string; body: string }[] = [];
    for (const { line, content } of page) {
      total++;
      const problem = checkLine(content, line, batch.endpoint, endpoint.schema, holder, customIds);
      if ('code' in problem) {
        if (errors.length < MAX_NAMED_ERRORS) errors.push(problem);
        continue;
      }
      good.push(problem);
    }
    if (errors.length === 0) await runs.addLines(batch.id, good);
  }
  // Its lines are read a page at a time: a file deleted before or while they were read would
  // leave the batch with none, or only its first pages.
  const stored = await runs.inputLineCount(batch.input_file_id);
  if (stored === undefined || stored !== total) {
    return { errors: [{ code: 'input_file_deleted', message: `the input file '${batch.input_file_id}' was deleted before the batch could read it`, param: 'input_file_id', line: null }] };
  }
  if (total === 0) return { errors: [lineError(0, 'empty_file', 'the input file has no lines')] };
  return errors.length > 0 ? { errors } : { total };
}

function checkLine(
  content: string, line: number, url: string, schema: (typeof batchEndpoints)[string]['schema'], holder: KeyHolder, customIds: Set<string>,
): BatchLineError | { line: number; customId: string; body: string } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(content);
  } catch {
    return lineError(line, 'invalid_json_line', 'This line is not parseable as valid JSON.');
  }
  // What a live request's body may not hold, a line may not either (6,000 levels of nesting threw
  // from JSON.stringify below, and its batch was taken again every 0.5 s for good).
  const shape = jsonShapeProblem(parsed);
  if (shape) return lineError(line, 'invalid_request', shape.message, shape.field === 'body' ? null : shape.field);
  try {
    const request = parseOrThrow(batchInputLineSchema, parsed);
    if (request.url !== url) return lineError(line, 'mismatched_endpoint', `The line's url '${request.url.slice(0, 100)}' does not match the batch's endpoint '${url}'.`, 'url');
    if (customIds.has(request.custom_id)) return lineError(line, 'duplicate_custom_id', `The custom_id '${request.custom_id.slice(0, 100)}' is used by another line; each line needs its own.`, 'custom_id');
    const body = parseOrThrow(schema, request.body, 'body');
    if (body.stream === true) return lineError(line, 'invalid_request', 'A batch line cannot be streamed: remove body.stream.', 'body.stream');
    if (!mayUseModel(holder, body.model)) {
      return lineError(line, 'model_not_allowed', `This API key may not use the model '${body.model.slice(0, 100)}'.`, 'body.model');
    }
    customIds.add(request.custom_id);
    return { line, customId: request.custom_id, body: JSON.stringify(body) };
  } catch (error) {
    if (error instanceof GatewayError) return lineError(line, 'invalid_request', error.message, error.param ?? null);
    // Anything else this line did is this line's fault, named, not its batch's to retry for good.
    return lineError(line, 'invalid_request', 'This line could not be validated.');
  }
}
