/**
 * The mock OpenAI upstream's `POST /v1/responses`, as OpenAI's API reference documents it: a
 * whole `response` object, or its stream of named events numbered by `sequence_number`
 * (`response.created`, `response.in_progress`, `response.output_item.added`,
 * `response.content_part.added`, one `response.output_text.delta` a word,
 * `response.output_text.done`, `response.content_part.done`, `response.output_item.done`,
 * `response.completed` with usage). The response echoes the request's settings, as OpenAI's does.
 */
import type { ServerResponse } from 'node:http';
import { randomBytes } from 'node:crypto';

export interface ResponsesReplyOptions {
  /** The reply's text (one delta a word when streamed). */
  text?: string;
  /** Fields put over the usage (`input_tokens`, `input_tokens_details`, …). */
  usageFields?: Record<string, unknown>;
  /** A stream waits this long between events. */
  chunkDelayMs?: number;
}

const words = (text: string) => text.split(/\s+/).filter(Boolean).length;

/** The words of the request's input, for its `input_tokens`. */
function inputWords(body: Record<string, unknown>): number {
  return words(`${typeof body.instructions === 'string' ? body.instructions : ''} ${JSON.stringify(body.input ?? '').replace(/[{}[\]":,]/g, ' ')}`);
}

/** The response object's settings, echoed from the request as OpenAI's response has them. */
function echoed(body: Record<string, unknown>): Record<string, unknown> {
  return {
    instructions: body.instructions ?? null,
    max_output_tokens: body.max_output_tokens ?? null,
    model: body.model,
    parallel_tool_calls: body.parallel_tool_calls ?? true,
    previous_response_id: body.previous_response_id ?? null,
    reasoning: body.reasoning ?? { effort: null, summary: null },
    store: body.store ?? true,
    temperature: body.temperature ?? 1,
    text: body.text ?? { format: { type: 'text' } },
    tool_choice: body.tool_choice ?? 'auto',
    tools: body.tools ?? [],
    top_p: body.top_p ?? 1,
    truncation: body.truncation ?? 'disabled',
    user: body.user ?? null,
    metadata: body.metadata ?? {},
  };
}

/** Answers the request; returns what it sent (the reply's JSON, or the stream's text). */
export async function answerResponses(res: ServerResponse, body: Record<string, unknown>, options: ResponsesReplyOptions, gone: AbortSignal): Promise<string> {
  const text = options.text ?? 'This is a mock response.';
  const id = `resp_${randomBytes(24).toString('hex')}`;
  const itemId = `msg_${randomBytes(24).toString('hex')}`;
  const input = inputWords(body);
  const createdAt = Math.floor(Date.now() / 1000);
  const usage = {
    input_tokens: input, input_tokens_details: { cached_tokens: 0 },
    output_tokens: words(text), output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: input + words(text), ...options.usageFields,
  };
  const response = (status: string, output: unknown[], final: boolean) => ({
    id, object: 'response', created_at: createdAt, status, background: false, error: null, incomplete_details: null,
    ...echoed(body), output, usage: final ? usage : null,
  });
  const part = (partText: string) => ({ type: 'output_text', annotations: [], logprobs: [], text: partText });
  const item = (status: string, content: unknown[]) => ({ id: itemId, type: 'message', status, content, role: 'assistant' });
  const done = item('completed', [part(text)]);
  if (body.stream !== true) {
    const whole = JSON.stringify(response('completed', [done], true));
    res.writeHead(200, { 'content-type': 'application/json' }).end(whole);
    return whole;
  }
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  let seq = 0;
  let sent = '';
  const send = async (type: string, fields: Record<string, unknown>) => {
    if (seq > 0 && options.chunkDelayMs) await new Promise((resolve) => setTimeout(resolve, options.chunkDelayMs));
    if (gone.aborted) return;
    const block = `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: seq++, ...fields })}\n\n`;
    sent += block;
    res.write(block);
  };
  const at = { item_id: itemId, output_index: 0, content_index: 0 };
  await send('response.created', { response: response('in_progress', [], false) });
  await send('response.in_progress', { response: response('in_progress', [], false) });
  await send('response.output_item.added', { output_index: 0, item: item('in_progress', []) });
  await send('response.content_part.added', { ...at, part: part('') });
  for (const delta of text.split(/(?<= )/)) await send('response.output_text.delta', { ...at, delta, logprobs: [] });
  await send('response.output_text.done', { ...at, text, logprobs: [] });
  await send('response.content_part.done', { ...at, part: part(text) });
  await send('response.output_item.done', { output_index: 0, item: done });
  await send('response.completed', { response: response('completed', [done], true) });
  res.end();
  return sent;
}
