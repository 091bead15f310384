/**
 * The most quota a request may use, decided from its body before it is enqueued: what it holds
 * on its key's and user's quota while in flight (see @gateway/store's QuotaHolds). A hold counts
 * a prompt's text at a token a UTF-8 byte, the most a byte-level tokenizer makes of it: the
 * client picks the text, and the estimate the workers charge by when an upstream reports no
 * usage (`estimateTokens`) is a guess a prompt of short words or rare characters may beat.
 */
import type { GeminiGenerateRequest } from './wire/gemini-generate.ts';
import { geminiRequestText } from './wire/gemini-generate.ts';
import type { CompletionRequest } from './wire/openai-completion.ts';
import type { ChatRequest } from './wire/openai-chat.ts';
import type { SpeechRequest } from './wire/openai-speech.ts';
import { embeddingInputs, type EmbeddingRequest } from './wire/openai-embeddings.ts';
import { otherOutputLengths } from './output-length.ts';

/**
 * The most tokens one request is counted for, charged or held: far past any real request, and
 * within what Redis's integer commands and its Lua's number formatting take exactly. An upstream
 * that answered a usage of 1e300 made every later charge of its channel and key fail for good.
 */
export const MAX_REQUEST_TOKENS = 2 ** 40;

/** A token count as it is counted: a whole number from 0 to MAX_REQUEST_TOKENS; 0 for what is not a finite number. */
export const tokenCount = (value: unknown): number =>
  typeof value === 'number' && Number.isFinite(value) ? Math.min(MAX_REQUEST_TOKENS, Math.max(0, Math.round(value))) : 0;

/**
 * The one estimate of usage the workers charge by when an upstream reports none (or a stream is
 * cut short before its usage): text by its weight (`textWeight`), four a token, and Gemini's 32
 * tokens a second of audio. An upstream's own counts always win.
 */
export function tokensOfWeight(weight: number): number {
  return Math.ceil(weight / 4);
}

/**
 * A text's weight in quarter tokens: an ASCII character 1 (four make a token, as English
 * does), every UTF-8 byte of any other character 3 (three quarters of a token a byte: a CJK
 * character 2.25 tokens, an emoji 3). Counted by characters, 100 CJK characters or 50 emoji
 * were charged 25 tokens where cl100k makes 93 and 140 of them; the rarest case measured (CJK
 * of the supplementary planes) makes 0.75 a byte in cl100k and o200k alike.
 */
export function textWeight(text: string): number {
  // All ASCII (one byte a character, counted natively): no loop over the characters.
  if (Buffer.byteLength(text, 'utf8') === text.length) return text.length;
  let weight = 0;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    // A surrogate is half of a 4-byte character: 2 bytes of it.
    weight += unit < 0x80 ? 1 : unit < 0x800 || (unit >= 0xd800 && unit <= 0xdfff) ? 6 : 9;
  }
  return weight;
}

export function estimateTokens(text: string): number {
  return tokensOfWeight(textWeight(text));
}

export function estimateAudioTokens(audioMs: number): number {
  return Math.ceil((audioMs / 1000) * 32);
}

export function estimatePromptTokens(prompt: unknown): number {
  if (typeof prompt === 'string') return estimateTokens(prompt);
  if (!Array.isArray(prompt)) return 0;
  let total = 0;
  for (const item of prompt) {
    if (typeof item === 'number') total += 1;
    else if (typeof item === 'string') total += estimateTokens(item);
    else if (Array.isArray(item)) total += item.length;
  }
  return total;
}

/** The most tokens text may make: one a UTF-8 byte. */
export function tokensAtMost(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}

/** The most tokens a prompt (one, or an array of prompts) may make. */
function promptTokensAtMost(prompt: CompletionRequest['prompt']): number {
  if (typeof prompt === 'string') return tokensAtMost(prompt);
  let total = 0;
  for (const item of prompt) total += typeof item === 'number' ? 1 : typeof item === 'string' ? tokensAtMost(item) : item.length;
  return total;
}

/** How many prompts a request sends: an array of strings or of token-id arrays is one per item. */
function promptCount(prompt: CompletionRequest['prompt']): number {
  return Array.isArray(prompt) && prompt.some((item) => typeof item !== 'number') ? prompt.length : 1;
}

/** OpenAI's default `max_tokens` for legacy completions. */
export const COMPLETION_DEFAULT_MAX_TOKENS = 16;

/**
 * The prompts (and a `suffix`, sent with each), plus `max_tokens` (16 when unset) for each of the
 * `best_of` or `n` completions made of each prompt.
 */
export function completionWorstCase(request: CompletionRequest): number {
  const prompts = promptCount(request.prompt);
  const completions = Math.max(request.n ?? 1, request.best_of ?? 1) * prompts;
  const suffix = request.suffix ? tokensAtMost(request.suffix) * prompts : 0;
  const output = Math.max(request.max_tokens ?? COMPLETION_DEFAULT_MAX_TOKENS, ...otherOutputLengths(request));
  return promptTokensAtMost(request.prompt) + suffix + output * completions;
}

/**
 * The most a Gemini speech model produces: 16,384 output tokens (655 s of audio at 25 tokens a
 * second), unless `maxOutputTokens` says less.
 */
export const SPEECH_MAX_OUTPUT_TOKENS = 16_384;

/**
 * The text, the system instruction and the tools (all counted as prompt by the upstream), plus
 * the output for each of the `candidateCount` candidates.
 */
export function speechWorstCase(request: GeminiGenerateRequest): number {
  const { generationConfig: config, systemInstruction, tools, toolConfig } = request;
  const output = Math.min(config.maxOutputTokens ?? SPEECH_MAX_OUTPUT_TOKENS, SPEECH_MAX_OUTPUT_TOKENS) * (config.candidateCount ?? 1);
  const around = systemInstruction || tools || toolConfig ? tokensAtMost(JSON.stringify({ systemInstruction, tools, toolConfig })) : 0;
  return Math.max(1, tokensAtMost(geminiRequestText(request))) + around + output;
}

/**
 * What a chat request holds when it sets no `max_completion_tokens` (or `max_tokens`). Its
 * upstream is sent no limit (the model's own default, which the gateway does not know, stands:
 * capping every chat of the SDKs, which send none, would cut long answers and reasoning short),
 * so such a chat may be charged more than it held: by what it writes past this.
 */
export const CHAT_DEFAULT_MAX_TOKENS = 4096;

/**
 * What a part that is no text holds: an image (inline or by address) a flat count, since
 * upstreams bill an image by its size in pixels, not its bytes (OpenAI counts a large image at
 * about 1,100, Anthropic at about 1,600); a sound's data at a token every AUDIO_CHARS_PER_TOKEN
 * characters of its base64; a file's data (a PDF) at a token a character, as a prompt's text. And
 * every other byte of the part's JSON (a `text` beside an image, any field passed through) at a
 * token a byte, at least the flat count. 12 PDFs of 200 KB each were held 2,020 tokens (or 21
 * with `"text": "."` on the part) and billed 50,000 each; an 800 KB photo held by its bytes
 * (1.07M) held back its key's other requests.
 */
export const NON_TEXT_PART_TOKENS = 2000;

/**
 * Base64 characters of a sound a token may stand for: Gemini counts 32 tokens a second of audio,
 * OpenAI about 10, and 32 characters a token holds enough for audio down to 6 kbps.
 */
export const AUDIO_CHARS_PER_TOKEN = 32;

/**
 * The same part in an estimate of what was used (an upstream that reported no usage, a stream cut
 * short before its usage came): OpenAI's count of a 1024×1024 image at high detail (85 + 4 × 170).
 */
export const NON_TEXT_PART_ESTIMATE = 765;

/** How a chat's prompt is counted: for its hold (the most it may be), or as an estimate of what was used. */
export type PromptCount = 'hold' | 'estimate';

/** A part that is text (or an assistant's refusal), by its type: its text. */
function textOf(part: Part): string | undefined {
  if (part?.type === 'text' && typeof part.text === 'string') return part.text;
  if (part?.type === 'refusal' && typeof part.refusal === 'string') return part.refusal;
  return undefined;
}

type Part = { type?: unknown; text?: unknown; refusal?: unknown; image_url?: { url?: unknown }; input_audio?: { data?: unknown }; file?: { file_data?: unknown } };

/** An inline image's data URL (`data:image/…`), whose bytes an upstream does not bill by. */
const INLINE_IMAGE = /^data:image\//i;

/**
 * A part that is no text, as its hold counts it (NON_TEXT_PART_TOKENS): its media's data by its
 * kind, the rest of its JSON at a token a byte, and at least the flat count.
 */
function heldMediaPart(part: Part): number {
  let media = 0;
  let rest: unknown = part;
  const url = part.image_url?.url;
  const audio = part.input_audio?.data;
  const file = part.file?.file_data;
  if (part.type === 'image_url' && typeof url === 'string' && INLINE_IMAGE.test(url)) {
    rest = { ...part, image_url: { ...part.image_url, url: '' } };
  } else if (part.type === 'input_audio' && typeof audio === 'string') {
    media = Math.ceil(audio.length / AUDIO_CHARS_PER_TOKEN);
    rest = { ...part, input_audio: { ...part.input_audio, data: '' } };
  } else if (part.type === 'file' && typeof file === 'string') {
    media = file.length;
    rest = { ...part, file: { ...part.file, file_data: '' } };
  }
  return Math.max(NON_TEXT_PART_TOKENS, media + tokensAtMost(JSON.stringify(rest) ?? ''));
}

/**
 * A message's content. Held: a text part at a token a byte of its JSON, any other by
 * `heldMediaPart`. Estimated: a text part by its text, any other NON_TEXT_PART_ESTIMATE.
 */
function contentTokens(content: unknown, count: PromptCount): number {
  if (typeof content === 'string') return count === 'hold' ? tokensAtMost(content) : estimateTokens(content);
  if (!Array.isArray(content)) return 0;
  let total = 0;
  for (const part of content as Part[]) {
    const text = textOf(part);
    if (count === 'hold') total += text === undefined ? heldMediaPart(part) : tokensAtMost(JSON.stringify(part));
    else total += text === undefined ? NON_TEXT_PART_ESTIMATE : estimateTokens(text);
  }
  return total;
}

/**
 * A chat request's fields counted by rules of their own (`messages`, and the output's settings)
 * or not at all (settings no upstream reads as prompt). Every other field (tools, functions,
 * response_format, prediction, tool_choice, function_call, and any the gateway passes through,
 * so a field added to the schema later too) counts at a token a byte of its JSON.
 */
const CHAT_FIELDS_NOT_PROMPT = new Set([
  'model', 'messages', 'max_tokens', 'max_completion_tokens', 'temperature', 'top_p', 'n', 'presence_penalty', 'frequency_penalty',
  'logit_bias', 'logprobs', 'top_logprobs', 'stop', 'seed', 'stream', 'stream_options', 'parallel_tool_calls', 'reasoning_effort',
  'modalities', 'audio', 'service_tier', 'store', 'metadata', 'user',
]);

/**
 * Every message's content by its parts (each by the bytes of its JSON, one that is no text at least a flat count), and everything else a
 * message carries (its role and name, an assistant's tool calls, function call and refusal, a
 * tool's call id, fields passed through) by its JSON: an assistant's `function_call.arguments` is
 * prompt as much as its content. Then every request field not in CHAT_FIELDS_NOT_PROMPT by its
 * JSON, and the output for each of the `n` choices.
 */
export function chatWorstCase(request: ChatRequest): number {
  // Every limit goes upstream as it came, and a server may read any of them: the largest is held.
  const limits = request.max_tokens == null ? otherOutputLengths(request) : [request.max_tokens, ...otherOutputLengths(request)];
  const output = limits.length > 0 ? Math.max(...limits) : CHAT_DEFAULT_MAX_TOKENS;
  return chatPromptTokens(request, 'hold') + output * (request.n ?? 1);
}

/**
 * A chat's prompt, every part of it that chatWorstCase holds (messages, tools, response format,
 * fields passed through), counted for its hold, or by default as an estimate, for the charge when
 * an upstream reports no usage or a stream is cut short before it did, so the charge counts what
 * the hold counted.
 */
export function chatPromptTokens(request: ChatRequest, count: PromptCount = 'estimate'): number {
  const tokensOf = count === 'hold' ? tokensAtMost : estimateTokens;
  let prompt = 0;
  for (const message of request.messages) {
    const { content, ...rest } = message as { content?: unknown };
    prompt += contentTokens(content, count) + tokensOf(JSON.stringify(rest));
  }
  const around: Record<string, unknown> = {};
  for (const [field, value] of Object.entries(request)) {
    if (!CHAT_FIELDS_NOT_PROMPT.has(field) && value !== undefined) around[field] = value;
  }
  return prompt + (Object.keys(around).length > 0 ? tokensOf(JSON.stringify(around)) : 0);
}

/** Every input, text by bytes and token ids one each: embeddings have no output. */
export function embeddingWorstCase(request: EmbeddingRequest): number {
  let total = 0;
  for (const input of embeddingInputs(request.input)) total += typeof input === 'string' ? tokensAtMost(input) : input.length;
  return Math.max(1, total);
}

/** The input and instructions (prompt), plus the most audio a speech model produces. */
export function openaiSpeechWorstCase(request: SpeechRequest): number {
  return tokensAtMost(request.input) + (request.instructions ? tokensAtMost(request.instructions) : 0) + SPEECH_MAX_OUTPUT_TOKENS;
}
