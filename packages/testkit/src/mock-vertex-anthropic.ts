/**
 * Claude on the mock Vertex AI: what Vertex refuses in a `:rawPredict` or `:streamRawPredict`
 * body (its version, no model, `stream` as the method says, then the Messages API's own checks),
 * and `count-tokens:rawPredict`, one endpoint for every Claude model with the model in the body,
 * counted as the Anthropic mock counts (a quarter of the request's text, rounded up).
 */
import { refusalOf } from './mock-anthropic-checks.ts';
import { requestText, tokens } from './mock-anthropic-reply.ts';
import type { MockExchange, MockRefusal } from './mock-wire-format.ts';

const VERTEX_ANTHROPIC_VERSION = 'vertex-2023-10-16';

/** The model segment of the count-tokens endpoint's path: `/publishers/anthropic/models/count-tokens:rawPredict`. */
export const COUNT_TOKENS_MODEL = 'count-tokens';

const invalid = (message: string): MockRefusal => ({ status: 400, body: { type: 'error', error: { type: 'invalid_request_error', message } } });

/** Anthropic on Vertex: its version in the body, no model there, `stream` as the method says; then the Messages API's own checks. */
export function anthropicRefusal(body: Record<string, unknown>, action: string): MockRefusal | undefined {
  if (body.anthropic_version !== VERTEX_ANTHROPIC_VERSION) return invalid(`anthropic_version: Input should be '${VERTEX_ANTHROPIC_VERSION}'`);
  if ('model' in body) return invalid('model: Extra inputs are not permitted');
  if ((body.stream === true) !== (action === 'streamRawPredict')) return invalid(`stream: ${action} takes stream ${action === 'streamRawPredict'}`);
  return messagesRefusal(body);
}

/**
 * count-tokens: the Claude model in the body (Google's example sends `model` and `messages`;
 * Anthropic's Vertex SDK adds its `anthropic_version`, taken when it is Vertex's), then the
 * Messages API's checks of the conversation.
 */
export function countTokensRefusal(body: Record<string, unknown>): MockRefusal | undefined {
  if ('anthropic_version' in body && body.anthropic_version !== VERTEX_ANTHROPIC_VERSION) return invalid(`anthropic_version: Input should be '${VERTEX_ANTHROPIC_VERSION}'`);
  if (typeof body.model !== 'string') return invalid('model: Field required');
  if (!/^claude-/.test(body.model)) return invalid(`model: ${body.model} is not a Claude model`);
  return messagesRefusal({ max_tokens: 1, ...body });
}

/** The count, as Anthropic answers count_tokens. */
export function answerCountTokens({ request, res }: MockExchange): void {
  res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ input_tokens: tokens(requestText(request.json ?? {})) }));
}

function messagesRefusal(body: Record<string, unknown>): MockRefusal | undefined {
  const refusal = refusalOf({ 'x-api-key': 'vertex', 'anthropic-version': '2023-06-01' }, { ...body, model: 'vertex' });
  return refusal ? invalid(refusal.message) : undefined;
}
