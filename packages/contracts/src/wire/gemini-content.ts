/**
 * Gemini's own format for text and chat models, and for embedding models: the body of
 * `:generateContent` / `:streamGenerateContent` when it asks for no audio (speech keeps its own
 * schema, gemini-generate.ts), and of `:embedContent` / `:batchEmbedContents`.
 *
 * The fields `@google/genai` sends are known and checked; an unknown one is refused with a 400
 * naming it, as Gemini does. What reaches into the channel's project (its files, caches, search
 * stores), which every caller of the gateway shares, or what costs more than the quota counts
 * (Google's searches), is refused with a reason.
 */
import { z } from 'zod';
import { camelizeFields, samplingFields, type FieldTree, type GeminiGenerateRequest } from './gemini-generate.ts';

const looseRecord = z.record(z.string(), z.unknown());
const SHARED_PROJECT = "the channel's project, which every caller of this gateway shares";
const refused = (reason: string) => z.never({ error: `is not served: ${reason}` }).optional();

export const geminiPart = z
  .strictObject({
    text: z.string().optional(),
    thought: z.boolean().optional(),
    // Kept byte for byte: a model's signed thought, replayed on the next turn.
    thoughtSignature: z.string().optional(),
    inlineData: z.looseObject({ mimeType: z.string(), data: z.string() }).optional(),
    functionCall: z.looseObject({ name: z.string().min(1), args: looseRecord.optional(), id: z.string().optional() }).optional(),
    functionResponse: z.looseObject({ name: z.string().min(1), response: looseRecord, id: z.string().optional() }).optional(),
    executableCode: looseRecord.optional(),
    codeExecutionResult: looseRecord.optional(),
    fileData: refused(`a file belongs to ${SHARED_PROJECT}; send its bytes as inlineData`),
    videoMetadata: looseRecord.optional(),
    mediaResolution: looseRecord.optional(),
    partMetadata: looseRecord.optional(),
  })
  .refine(
    (part) => ['text', 'inlineData', 'functionCall', 'functionResponse', 'executableCode', 'codeExecutionResult'].some((field) => field in part),
    'must hold text, inlineData, functionCall, functionResponse, executableCode or codeExecutionResult',
  );

export const geminiChatContent = z.strictObject({
  role: z.string().optional(),
  parts: z.array(geminiPart).min(1, 'must hold at least one part'),
});

export const geminiFunctionDeclaration = z.looseObject({
  name: z.string().min(1, 'must name the function'),
  description: z.string().optional(),
  parameters: z.unknown().optional(),
  parametersJsonSchema: z.unknown().optional(),
  response: z.unknown().optional(),
  responseJsonSchema: z.unknown().optional(),
});

const searchCost = 'a search is billed to the channel at a price the quota does not count';
export const geminiTool = z.strictObject({
  functionDeclarations: z.array(geminiFunctionDeclaration).optional(),
  codeExecution: looseRecord.optional(),
  googleSearch: refused(searchCost),
  googleSearchRetrieval: refused(searchCost),
  enterpriseWebSearch: refused(searchCost),
  googleMaps: refused(searchCost),
  urlContext: refused('a fetched page is prompt the hold cannot count before it is fetched'),
  fileSearch: refused(`a file search store belongs to ${SHARED_PROJECT}`),
  retrieval: refused(`a retrieval store belongs to ${SHARED_PROJECT}`),
  computerUse: refused('the gateway serves function declarations and code execution only'),
});

export const geminiChatGenerationConfig = z.strictObject({
  ...samplingFields,
  candidateCount: z.number().int().positive().max(8).optional(),
  responseModalities: z.array(z.string()).optional(),
  thinkingConfig: z.looseObject({ includeThoughts: z.boolean().optional(), thinkingBudget: z.number().int().optional(), thinkingLevel: z.string().optional() }).optional(),
  imageConfig: looseRecord.optional(),
  enableEnhancedCivicAnswers: z.boolean().optional(),
  audioTimestamp: z.boolean().optional(),
});

const chatRequestObject = z.strictObject({
  contents: z.array(geminiChatContent, { error: (issue) => (issue.input === undefined ? 'required: the conversation, as contents[].parts[]' : undefined) }).min(1, 'must hold at least one content'),
  // Gemini accepts the model in the body too; the path's model is the one that counts.
  model: z.string().optional(),
  systemInstruction: z.strictObject({ role: z.string().optional(), parts: z.array(geminiPart).min(1) }).optional(),
  tools: z.array(geminiTool).optional(),
  toolConfig: looseRecord.optional(),
  safetySettings: z.array(z.looseObject({ category: z.string(), threshold: z.string() })).optional(),
  generationConfig: geminiChatGenerationConfig.optional(),
  labels: z.record(z.string(), z.string()).optional(),
  cachedContent: refused(`a cached content belongs to ${SHARED_PROJECT}; send the text in contents`),
  serviceTier: z.string().refine((tier) => !/priority/i.test(tier), 'is not offered through this gateway: a premium tier costs more than the quota counts').optional(),
  store: z.boolean().optional(),
});

/** Where snake_case names are renamed (proto3's JSON mapping takes both); free-form values keep their keys. */
const partTree: FieldTree = { inlineData: {}, functionCall: {}, functionResponse: {}, executableCode: {}, codeExecutionResult: {} };
const partsTree: FieldTree = { parts: { '[]': partTree } };
const chatFieldTree: FieldTree = {
  contents: { '[]': partsTree },
  systemInstruction: partsTree,
  tools: { '[]': { functionDeclarations: { '[]': {} } } },
  toolConfig: { functionCallingConfig: {} },
  generationConfig: { thinkingConfig: {} },
};

/** The body of `:generateContent` / `:streamGenerateContent` for a text or chat model. */
export const geminiChatRequest = z.preprocess((body) => camelizeFields(body, chatFieldTree), chatRequestObject);
export type GeminiChatRequest = z.infer<typeof geminiChatRequest>;
export type GeminiPart = z.infer<typeof geminiPart>;
/** What Gemini's generateContent door carries: a speech request or a chat request. */
export type GeminiContentRequest = GeminiGenerateRequest | GeminiChatRequest;

/**
 * Whether a `generateContent` body asks for speech (AUDIO among its responseModalities, or a
 * speechConfig): the audio queue's, with the speech schema; any other is a chat's.
 */
export function asksForSpeech(body: unknown): boolean {
  const config = (body as Record<string, unknown> | null)?.generationConfig ?? (body as Record<string, unknown> | null)?.generation_config;
  if (config === null || typeof config !== 'object') return false;
  const fields = config as Record<string, unknown>;
  const modalities = fields.responseModalities ?? fields.response_modalities;
  if (fields.speechConfig !== undefined || fields.speech_config !== undefined) return true;
  return Array.isArray(modalities) && modalities.some((m) => typeof m === 'string' && m.toUpperCase() === 'AUDIO');
}

// ---------------------------------------------------------------------------------------------
// Embeddings

const embedContentObject = z.strictObject({
  model: z.string().optional(),
  content: z.strictObject({
    role: z.string().optional(),
    parts: z.array(z.strictObject({ text: z.string({ error: 'required: an embedding model embeds text parts' }) })).min(1, 'must hold at least one part'),
  }),
  taskType: z.string().optional(),
  title: z.string().optional(),
  outputDimensionality: z.number().int().positive().optional(),
});

const embedTree: FieldTree = { content: { parts: { '[]': {} } } };

/** Gemini's limit on the requests of one `:batchEmbedContents`. */
export const GEMINI_MAX_EMBED_REQUESTS = 100;

/** The body of `:embedContent`: one content. */
export const geminiEmbedContentRequest = z.preprocess((body) => camelizeFields(body, embedTree), embedContentObject);
/** The body of `:batchEmbedContents`: a request per content. */
export const geminiBatchEmbedRequest = z.preprocess(
  (body) => camelizeFields(body, { requests: { '[]': embedTree } }),
  z.strictObject({ requests: z.array(embedContentObject).min(1, 'must hold at least one request').max(GEMINI_MAX_EMBED_REQUESTS, `must hold at most ${GEMINI_MAX_EMBED_REQUESTS} requests, as Gemini's`) }),
);
export type GeminiEmbedContentRequest = z.infer<typeof geminiEmbedContentRequest>;
export type GeminiBatchEmbedRequest = z.infer<typeof geminiBatchEmbedRequest>;

/** The texts of an embedding request, one a request of the batch. */
export const geminiEmbedTexts = (request: GeminiBatchEmbedRequest): string[] =>
  request.requests.map((one) => one.content.parts.map((part) => part.text).join(''));

/**
 * The vectors as a provider's mapping returns them: Gemini's `batchEmbedContents` reply, and the
 * prompt tokens where the upstream reported them (Gemini reports none).
 */
export interface GeminiEmbedReply {
  embeddings: { values: number[] }[];
  promptTokens?: number;
}

export const geminiBatchEmbedReply = z.looseObject({
  embeddings: z.array(z.looseObject({ values: z.array(z.number()) })),
});
