/**
 * What the mock OpenAI upstream answers to each operation, as OpenAI's API reference defines
 * it: a whole reply, and the same answer as stream chunks (each without `usage`) plus the usage
 * chunk a stream ends with when `stream_options.include_usage` is set.
 */
import { createHash } from 'node:crypto';

/** A tool call a chat reply makes: the function's name and its arguments' JSON. */
export interface MockToolCall {
  name: string;
  arguments: string;
}

export interface ReplyOptions {
  /** The completion text, or a function of the prompt (one chunk a word when streamed). */
  text?: string | ((prompt: string) => string);
  /** A chat reply calls this tool (when the request offers tools) instead of answering in text, or the one a function of the request decides. */
  toolCall?: MockToolCall | ((request: Record<string, unknown>) => MockToolCall | undefined);
  /**
   * Write as many words (one token each) as the request's output limit allows (`max_tokens`;
   * for chat `max_completion_tokens`, or `max_tokens`), ending for `length` as OpenAI does; a
   * request with no limit gets this many, as llama.cpp and vLLM run on to the context.
   */
  wordsWithoutLimit?: number;
}

/** The text of `options`, or as many words as the limit allows (`wordsWithoutLimit`), and why it ends. */
function textFor(prompt: string, options: ReplyOptions, limit: unknown): { text: string; finish: 'stop' | 'length' } {
  if (options.wordsWithoutLimit === undefined) return { text: (typeof options.text === 'function' ? options.text(prompt) : options.text) ?? DEFAULT_TEXT, finish: 'stop' };
  const words = typeof limit === 'number' ? limit : options.wordsWithoutLimit;
  return { text: Array.from({ length: words }, () => 'word').join(' '), finish: 'length' };
}

export interface PlannedReply {
  whole: Record<string, unknown>;
  chunks: Record<string, unknown>[];
  usage: Record<string, number>;
  /** The usage chunk a stream ends with, when asked for. */
  usageChunk: Record<string, unknown>;
}

const words = (text: string) => text.split(/\s+/).filter(Boolean).length;

function promptText(prompt: unknown): string {
  if (typeof prompt === 'string') return prompt;
  if (Array.isArray(prompt)) return prompt.map((p) => (Array.isArray(p) ? p.join(' ') : String(p))).join(' ');
  return '';
}

function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((part: { text?: unknown }) => (typeof part?.text === 'string' ? part.text : '')).join(' ');
  return '';
}

const DEFAULT_TEXT = 'This is a mock completion.';
let sequence = 0;

/** `POST /v1/completions`: `n` choices of the text (the prompt first when `echo`), with logprobs when asked. */
export function planCompletion(body: Record<string, unknown>, options: ReplyOptions): PlannedReply {
  const id = `cmpl-mock-${++sequence}`;
  const created = Math.floor(Date.now() / 1000);
  const model = String(body.model ?? '');
  const n = typeof body.n === 'number' ? body.n : 1;
  const prompt = promptText(body.prompt);
  const { text, finish } = textFor(prompt, options, body.max_tokens);
  const prefix = body.echo === true ? prompt : '';
  const usage = { prompt_tokens: words(prompt), completion_tokens: words(text) * n, total_tokens: words(prompt) + words(text) * n };
  const logprobs = typeof body.logprobs === 'number'
    ? { tokens: text.split(' '), token_logprobs: text.split(' ').map(() => -0.5), top_logprobs: null, text_offset: text.split(' ').map((_, i) => i) }
    : null;
  const base = { id, object: 'text_completion', created, model };
  const pieces = text.split(' ').map((w, i) => (i === 0 ? prefix + w : ` ${w}`));
  const chunks: Record<string, unknown>[] = [];
  for (let index = 0; index < n; index++) {
    for (const piece of pieces) chunks.push({ ...base, choices: [{ text: piece, index, logprobs: null, finish_reason: null }] });
    chunks.push({ ...base, choices: [{ text: '', index, logprobs: null, finish_reason: finish }] });
  }
  return {
    whole: { ...base, choices: Array.from({ length: n }, (_, index) => ({ text: prefix + text, index, logprobs, finish_reason: finish })), usage },
    chunks,
    usage,
    usageChunk: { ...base, choices: [], usage },
  };
}

/**
 * `POST /v1/chat/completions`: the text as the assistant's answer, or, when the request offers
 * tools and its last user message asks about the weather (not once a tool answered), or `toolCall` is set (or, a
 * function, decides so), a call of the
 * first tool. Streamed, a tool call's arguments come in several pieces, as OpenAI sends them.
 */
export function planChat(body: Record<string, unknown>, options: ReplyOptions): PlannedReply {
  const id = `chatcmpl-mock-${++sequence}`;
  const created = Math.floor(Date.now() / 1000);
  const model = String(body.model ?? '');
  const n = typeof body.n === 'number' ? body.n : 1;
  const messages = Array.isArray(body.messages) ? (body.messages as { role?: string; content?: unknown }[]) : [];
  const prompt = messages.map((m) => contentText(m.content)).join(' ');
  const lastUser = [...messages].reverse().find((m) => m.role === 'user');
  const tools = Array.isArray(body.tools) ? (body.tools as { function?: { name?: string } }[]) : [];
  // A tool's answer (the conversation ends with a tool message) is answered in text, never with another call of the mock's own.
  const answered = messages.at(-1)?.role === 'tool';
  const weather = !answered && /weather/i.test(contentText(lastUser?.content)) ? { name: tools[0]?.function?.name ?? 'tool', arguments: JSON.stringify({ city: 'Paris' }) } : undefined;
  const scripted = typeof options.toolCall === 'function' ? options.toolCall(body) : options.toolCall ?? weather;
  const call = tools.length > 0 && body.tool_choice !== 'none' ? scripted : undefined;
  const { text, finish } = textFor(prompt, options, body.max_completion_tokens ?? body.max_tokens);
  const produced = call ? call.name + call.arguments : text;
  const usage = { prompt_tokens: words(prompt), completion_tokens: Math.max(1, words(produced)) * n, total_tokens: words(prompt) + Math.max(1, words(produced)) * n };
  const base = { id, object: 'chat.completion.chunk', created, model, system_fingerprint: 'fp_mock' };
  const chunks: Record<string, unknown>[] = [];
  const choices = [];
  for (let index = 0; index < n; index++) {
    const callId = `call_mock_${sequence}_${index}`;
    chunks.push({ ...base, choices: [{ index, delta: { role: 'assistant', content: call ? null : '' }, logprobs: null, finish_reason: null }] });
    if (call) {
      chunks.push({ ...base, choices: [{ index, delta: { tool_calls: [{ index: 0, id: callId, type: 'function', function: { name: call.name, arguments: '' } }] }, logprobs: null, finish_reason: null }] });
      const args = call.arguments;
      const step = Math.max(1, Math.ceil(args.length / 3));
      for (let at = 0; at < args.length; at += step) {
        chunks.push({ ...base, choices: [{ index, delta: { tool_calls: [{ index: 0, function: { arguments: args.slice(at, at + step) } }] }, logprobs: null, finish_reason: null }] });
      }
    } else {
      for (const [i, word] of text.split(' ').entries()) {
        chunks.push({ ...base, choices: [{ index, delta: { content: i === 0 ? word : ` ${word}` }, logprobs: null, finish_reason: null }] });
      }
    }
    chunks.push({ ...base, choices: [{ index, delta: {}, logprobs: null, finish_reason: call ? 'tool_calls' : finish }] });
    choices.push({
      index,
      message: call
        ? { role: 'assistant', content: null, refusal: null, tool_calls: [{ id: callId, type: 'function', function: call }] }
        : { role: 'assistant', content: text, refusal: null },
      logprobs: null,
      finish_reason: call ? 'tool_calls' : finish,
    });
  }
  return {
    whole: { id, object: 'chat.completion', created, model, system_fingerprint: 'fp_mock', choices, usage },
    chunks,
    usage,
    usageChunk: { ...base, choices: [], usage },
  };
}

/** A vector of `dimensions` floats in [-1, 1], the same for the same text. */
function vectorOf(input: unknown, dimensions: number): number[] {
  const digest = createHash('sha256').update(JSON.stringify(input)).digest();
  return Array.from({ length: dimensions }, (_, i) => (digest[i % digest.length]! - 127.5) / 127.5);
}

/** `POST /v1/embeddings`: one vector an input (8 floats unless `dimensions`), base64 when asked. */
export interface EmbeddingOptions {
  /** The vectors in this format whatever `encoding_format` asked (a server that ignores the field). */
  embeddingFormat?: 'float' | 'base64';
  /** The reply padded (a `padding` field) to at least this many bytes. */
  embeddingPadBytes?: number;
}

export function planEmbeddings(body: Record<string, unknown>, options: EmbeddingOptions = {}): PlannedReply {
  const input = body.input;
  const inputs: unknown[] = typeof input === 'string' ? [input] : Array.isArray(input) && typeof input[0] === 'number' ? [input] : Array.isArray(input) ? input : [];
  const dimensions = typeof body.dimensions === 'number' ? body.dimensions : 8;
  const tokens = inputs.reduce<number>((sum, item) => sum + (typeof item === 'string' ? words(item) : Array.isArray(item) ? item.length : 0), 0);
  const data = inputs.map((item, index) => {
    const vector = vectorOf(item, dimensions);
    const format = options.embeddingFormat ?? body.encoding_format;
    const embedding = format === 'base64' ? Buffer.from(new Float32Array(vector).buffer).toString('base64') : vector;
    return { object: 'embedding', index, embedding };
  });
  const usage = { prompt_tokens: tokens, total_tokens: tokens };
  const padding = options.embeddingPadBytes ? { padding: 'x'.repeat(options.embeddingPadBytes) } : {};
  return { whole: { object: 'list', data, model: String(body.model ?? ''), usage, ...padding }, chunks: [], usage, usageChunk: {} };
}
