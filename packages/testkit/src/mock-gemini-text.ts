/**
 * The mock Gemini upstream's text model (mock-gemini-upstream.ts serves it for every
 * `generateContent` body that asks for no audio), answering as Gemini documents:
 *
 * - text: `Echo: <the last user text>` (or the mock's fixed `text`), in one candidate with
 *   finishReason STOP; streamed, a word or so an event, the last with finishReason and usage;
 * - a function call when the request declares functions and its last turn holds no
 *   functionResponse: a `functionCall` part for the first declaration, its `args` a sample of its
 *   parameters' schema; after a functionResponse, text that names the function and its result;
 * - JSON when `responseMimeType` is `application/json`: a sample of `responseJsonSchema` (or
 *   `responseSchema`, Gemini's OpenAPI subset), every property filled;
 * - a thought part (`thought: true`) first when `thinkingConfig.includeThoughts` is set, counted
 *   in `thoughtsTokenCount`;
 * - usage: promptTokenCount = ceil(characters of every text part, the system instruction and
 *   the tools' JSON / 4); candidatesTokenCount = ceil(characters of the answer / 4);
 *   cachedContentTokenCount = the mock's `cachedTokens` (at most the prompt) when set;
 *   totalTokenCount = prompt + candidates + thoughts.
 */
import type { GeminiChatRequest } from '@gateway/contracts';

export interface MockGeminiTextBehaviour {
  /** The answer's text instead of the echo. Default null. */
  text: string | null;
  /** Prompt tokens reported as read from the provider's cache (cachedContentTokenCount). Default 0. */
  cachedTokens: number;
}

export const MOCK_THOUGHT = 'Thinking it over: the user wants a short answer.';

type Schema = { type?: unknown; properties?: Record<string, Schema>; items?: Schema; enum?: unknown[] };

/** A value of the schema's type, every property filled: strings `mock`, numbers 1, booleans true. */
export function sampleOf(schema: Schema | undefined): unknown {
  const type = String(schema?.type ?? 'object').toLowerCase();
  if (schema?.enum?.length) return schema.enum[0];
  switch (type) {
    case 'string': return 'mock';
    case 'number':
    case 'integer': return 1;
    case 'boolean': return true;
    case 'array': return [sampleOf(schema?.items)];
    case 'object': return Object.fromEntries(Object.entries(schema?.properties ?? {}).map(([name, property]) => [name, sampleOf(property)]));
    default: return null;
  }
}

const tokens = (text: string) => Math.ceil([...text].length / 4);

function promptText(request: GeminiChatRequest): string {
  const parts = [...request.contents.flatMap((c) => c.parts), ...(request.systemInstruction?.parts ?? [])];
  return parts.map((p) => p.text ?? (p.functionResponse ? JSON.stringify(p.functionResponse) : '')).join('') + (request.tools ? JSON.stringify(request.tools) : '');
}

/** The answer's parts, before streaming splits its text. */
function answerParts(request: GeminiChatRequest, fixed: string | null): Record<string, unknown>[] {
  const last = request.contents.at(-1)!;
  const declared = request.tools?.flatMap((tool) => tool.functionDeclarations ?? []) ?? [];
  const answered = last.parts.find((p) => p.functionResponse)?.functionResponse;
  if (declared.length > 0 && !answered) {
    const declaration = declared[0]!;
    const args = sampleOf((declaration.parametersJsonSchema ?? declaration.parameters) as Schema | undefined);
    return [{ functionCall: { name: declaration.name, args } }];
  }
  if (answered) return [{ text: `The function ${answered.name} returned ${JSON.stringify(answered.response)}` }];
  const config = request.generationConfig;
  if (config?.responseMimeType === 'application/json') {
    return [{ text: JSON.stringify(sampleOf((config.responseJsonSchema ?? config.responseSchema) as Schema | undefined)) }];
  }
  const userText = last.parts.map((p) => p.text ?? '').join('');
  return [{ text: fixed ?? `Echo: ${userText}` }];
}

/** The answer as Gemini's events: one whole reply, or a stream of them (`whole` is the first alone). */
export function textEvents(request: GeminiChatRequest, model: string, b: MockGeminiTextBehaviour, stream: boolean, responseId: string): Record<string, unknown>[] {
  const parts = answerParts(request, b.text);
  const thinking = request.generationConfig?.thinkingConfig?.includeThoughts === true;
  const answerText = parts.map((p) => (typeof p.text === 'string' ? p.text : JSON.stringify(p.functionCall))).join('');
  const prompt = Math.max(1, tokens(promptText(request)));
  const candidates = tokens(answerText);
  const thoughts = thinking ? tokens(MOCK_THOUGHT) : 0;
  const usageMetadata = {
    promptTokenCount: prompt,
    candidatesTokenCount: candidates,
    totalTokenCount: prompt + candidates + thoughts,
    ...(b.cachedTokens > 0 ? { cachedContentTokenCount: Math.min(b.cachedTokens, prompt) } : {}),
    ...(thinking ? { thoughtsTokenCount: thoughts } : {}),
    promptTokensDetails: [{ modality: 'TEXT', tokenCount: prompt }],
  };
  const thoughtPart = { text: MOCK_THOUGHT, thought: true };
  const event = (eventParts: Record<string, unknown>[], last: boolean) => ({
    candidates: [{ content: { role: 'model', parts: eventParts }, ...(last ? { finishReason: 'STOP' } : {}), index: 0 }],
    ...(last ? { usageMetadata } : {}),
    modelVersion: model,
    responseId,
  });
  if (!stream) return [event(thinking ? [thoughtPart, ...parts] : parts, true)];
  // Text in pieces of a few words; a function call whole, as Gemini streams it.
  const pieces: Record<string, unknown>[][] = thinking ? [[thoughtPart]] : [];
  for (const part of parts) {
    if (typeof part.text !== 'string') pieces.push([part]);
    else for (const words of part.text.match(/\S+\s*/g) ?? ['']) pieces.push([{ text: words }]);
  }
  return pieces.map((eventParts, i) => event(eventParts, i === pieces.length - 1));
}
