/**
 * The Gemini `generateContent` wire format, as far as speech generation needs it: the request
 * the gateway accepts on `/v1beta/models/{model}:generateContent` (and `:streamGenerateContent`),
 * the reply it returns, and Gemini's error body.
 *
 * What is checked strictly is what speech generation depends on (text contents, AUDIO output, a
 * prebuilt voice or two speakers). The other fields Gemini's API and `@google/genai` may send
 * (system instruction, safety settings, sampling parameters, …) are accepted and passed through
 * to the upstream as they are; an unknown field is refused with a 400 naming it, as Gemini does.
 */
import { z } from 'zod';
import { ownValue } from '../own-value.ts';

/** "required: …" for a missing field, instead of zod's "expected object, received undefined". */
const whenMissing = (message: string) => ({
  error: (issue: { input?: unknown }) => (issue.input === undefined ? `required: ${message}` : undefined),
});

/** Gemini's prebuilt TTS voices. */
export const GEMINI_PREBUILT_VOICES = [
  'Zephyr', 'Puck', 'Charon', 'Kore', 'Fenrir', 'Leda', 'Orus', 'Aoede', 'Callirrhoe', 'Autonoe',
  'Enceladus', 'Iapetus', 'Umbriel', 'Algieba', 'Despina', 'Erinome', 'Algenib', 'Rasalgethi',
  'Laomedeia', 'Achernar', 'Alnilam', 'Schedar', 'Gacrux', 'Pulcherrima', 'Achird',
  'Zubenelgenubi', 'Vindemiatrix', 'Sadachbia', 'Sadaltager', 'Sulafat',
] as const;

export const geminiVoiceName = z.enum(GEMINI_PREBUILT_VOICES, {
  error: (issue) =>
    issue.input === undefined
      ? 'required'
      : `unknown voice ${JSON.stringify(issue.input)}; use one of the prebuilt voices: ${GEMINI_PREBUILT_VOICES.join(', ')}`,
});

// ---------------------------------------------------------------------------------------------
// Request

const textPart = z.strictObject({
  text: z
    .string({ error: (issue) => (issue.input === undefined ? 'required: speech generation takes text parts only' : undefined) })
    .min(1, 'must not be empty'),
});

export const geminiContent = z.strictObject({
  role: z.enum(['user', 'model']).optional(),
  parts: z.array(textPart).min(1, 'must hold at least one part'),
});

export const geminiVoiceConfig = z.strictObject({
  prebuiltVoiceConfig: z.strictObject({ voiceName: geminiVoiceName }),
});

export const geminiSpeakerVoiceConfig = z.strictObject({
  speaker: z.string().min(1, 'must name the speaker as the text does'),
  voiceConfig: geminiVoiceConfig,
});

export const geminiMultiSpeakerVoiceConfig = z.strictObject({
  speakerVoiceConfigs: z.array(geminiSpeakerVoiceConfig).length(2, 'must hold exactly two speakers'),
});

export const geminiSpeechConfig = z
  .strictObject(
    {
      voiceConfig: geminiVoiceConfig.optional(),
      multiSpeakerVoiceConfig: geminiMultiSpeakerVoiceConfig.optional(),
      languageCode: z.string().min(2).max(35).optional(),
    },
    whenMissing('speech generation needs a voiceConfig or a multiSpeakerVoiceConfig'),
  )
  .superRefine((speech, ctx) => {
    if (speech.voiceConfig && speech.multiSpeakerVoiceConfig) {
      ctx.addIssue({
        code: 'custom',
        path: ['multiSpeakerVoiceConfig'],
        message: 'give either voiceConfig or multiSpeakerVoiceConfig, not both',
      });
    } else if (!speech.voiceConfig && !speech.multiSpeakerVoiceConfig) {
      ctx.addIssue({
        code: 'custom',
        path: ['voiceConfig', 'prebuiltVoiceConfig', 'voiceName'],
        message: 'required (or multiSpeakerVoiceConfig for two speakers)',
      });
    }
  });

const modality = z
  .string()
  .transform((m) => m.toUpperCase())
  .pipe(z.enum(['TEXT', 'IMAGE', 'AUDIO', 'VIDEO', 'MODALITY_UNSPECIFIED']));

const looseRecord = z.record(z.string(), z.unknown());

/**
 * The generation settings Gemini's speech and chat requests share, passed through to the
 * upstream as they came (Gemini itself judges their values).
 */
export const samplingFields = {
  temperature: z.number().optional(),
  topP: z.number().optional(),
  topK: z.number().optional(),
  maxOutputTokens: z.number().int().positive().optional(),
  stopSequences: z.array(z.string()).optional(),
  responseLogprobs: z.boolean().optional(),
  logprobs: z.number().int().optional(),
  presencePenalty: z.number().optional(),
  frequencyPenalty: z.number().optional(),
  seed: z.number().int().optional(),
  responseMimeType: z.string().optional(),
  responseSchema: z.unknown().optional(),
  responseJsonSchema: z.unknown().optional(),
  mediaResolution: z.string().optional(),
};
export const geminiGenerationConfig = z.strictObject({
  responseModalities: z
    .array(modality, whenMissing('speech generation needs ["AUDIO"]'))
    .refine((modalities) => modalities.includes('AUDIO'), 'must contain "AUDIO" for speech generation'),
  speechConfig: geminiSpeechConfig,
  ...samplingFields,
  candidateCount: z.number().int().positive().optional(),
  thinkingConfig: looseRecord.optional(),
  audioTranscriptionConfig: looseRecord.optional(),
  imageConfig: looseRecord.optional(),
  enableEnhancedCivicAnswers: z.boolean().optional(),
  enableAffectiveDialog: z.boolean().optional(),
}, whenMissing('speech generation needs responseModalities ["AUDIO"] and a speechConfig'));

const generateRequestObject = z.strictObject({
  contents: z.array(geminiContent, whenMissing('the text to speak, as contents[].parts[].text')).min(1, 'must hold at least one content'),
  generationConfig: geminiGenerationConfig,
  // Gemini accepts the model in the body too; the path's model is the one that counts.
  model: z.string().optional(),
  // Passed through as they are (the SDK moves these out of its `config`). A system instruction
  // of text only: a part may name a file (`fileData`) of the channel's project, which every
  // tenant shares (another project's answered 403, which cooled the channel for everyone).
  systemInstruction: z.looseObject({ role: z.string().optional(), parts: z.array(textPart) }).optional(),
  safetySettings: z.array(z.looseObject({ category: z.string(), threshold: z.string() })).optional(),
  // A tool may search the channel's project's stores (`fileSearch`, `retrieval`) or the web at
  // a price the quota does not count; speech generation calls none.
  tools: z.never({ error: 'is not served: speech generation calls no tools, and a tool may reach the channel\'s project, which every caller of this gateway shares' }).optional(),
  toolConfig: looseRecord.optional(),
  labels: z.record(z.string(), z.string()).optional(),
  // A cache lives in the channel's project, which every tenant of the channel shares: another
  // tenant's (or the operator's) cached prompt is not a caller's to read, and its tokens, which
  // the upstream charges, are not in the request for its hold to count.
  cachedContent: z.never({ error: 'is not served: a cached content belongs to the channel\'s project, which every caller of this gateway shares; send the text in contents' }).optional(),
  // A premium tier costs more than the quota counts (as OpenAI's `service_tier`).
  serviceTier: z.string().refine((tier) => !/priority/i.test(tier), 'is not offered through this gateway: a premium tier costs more than the quota counts').optional(),
  store: z.boolean().optional(),
  continuationToken: z.string().optional(),
});

/**
 * Where field names may be snake_case: proto3's JSON mapping (which Gemini's REST API follows)
 * accepts `generation_config` as well as `generationConfig`, and curl users send both. Only
 * these structural levels are renamed; free-form values (labels, schemas, tools) keep their keys.
 */
export interface FieldTree {
  [field: string]: FieldTree;
}
const voiceTree: FieldTree = { prebuiltVoiceConfig: {} };
const partsTree: FieldTree = { parts: { '[]': {} } };
const requestFieldTree: FieldTree = {
  contents: { '[]': partsTree },
  systemInstruction: partsTree,
  generationConfig: {
    speechConfig: {
      voiceConfig: voiceTree,
      multiSpeakerVoiceConfig: { speakerVoiceConfigs: { '[]': { voiceConfig: voiceTree } } },
    },
  },
};

const camelCase = (name: string) => name.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());

export function camelizeFields(value: unknown, tree: FieldTree): unknown {
  if (Array.isArray(value)) {
    const items = tree['[]'];
    return items ? value.map((item) => camelizeFields(item, items)) : value;
  }
  if (value === null || typeof value !== 'object') return value;
  const source = value as Record<string, unknown>;
  const renamed: Record<string, unknown> = {};
  for (const [key, field] of Object.entries(source)) {
    const camel = camelCase(key);
    // When both spellings are present keep both, so the strict schema reports the duplicate.
    const name = camel !== key && camel in source ? key : camel;
    const subtree = ownValue(tree, name);
    renamed[name] = subtree ? camelizeFields(field, subtree) : field;
  }
  return renamed;
}

/** The body of `POST /v1beta/models/{model}:generateContent` for speech generation. */
export const geminiGenerateRequest = z.preprocess((body) => camelizeFields(body, requestFieldTree), generateRequestObject);

export type GeminiGenerateRequest = z.infer<typeof geminiGenerateRequest>;
export type GeminiContent = z.infer<typeof geminiContent>;
export type GeminiSpeechConfig = z.infer<typeof geminiSpeechConfig>;
export type GeminiVoiceName = z.infer<typeof geminiVoiceName>;

/** The text to be spoken: every text part of every content, in order. */
export function geminiRequestText(request: Pick<GeminiGenerateRequest, 'contents'>): string {
  return request.contents.flatMap((content) => content.parts.map((part) => part.text)).join('');
}

// ---------------------------------------------------------------------------------------------
// Response (loose: whatever else the upstream adds travels on to the caller)

export const geminiInlineData = z.looseObject({ mimeType: z.string(), data: z.string() });

export const geminiResponsePart = z.looseObject({
  text: z.string().optional(),
  inlineData: geminiInlineData.optional(),
});

export const geminiSafetyRating = z.looseObject({
  category: z.string().optional(),
  probability: z.string().optional(),
  blocked: z.boolean().optional(),
});

export const geminiCandidate = z.looseObject({
  content: z.looseObject({ role: z.string().optional(), parts: z.array(geminiResponsePart).optional() }).optional(),
  finishReason: z.string().optional(),
  // Gemini's TTS models leave it out; the gateway's reply always carries the array.
  safetyRatings: z.array(geminiSafetyRating).default([]),
  index: z.number().int().optional(),
});

export const geminiModalityTokenCount = z.looseObject({
  modality: z.string().optional(),
  tokenCount: z.number().int().nonnegative().default(0),
});

const tokenCount = z.number().int().nonnegative();

export const geminiUsageMetadata = z
  .looseObject({
    promptTokenCount: tokenCount.default(0),
    candidatesTokenCount: tokenCount.default(0),
    totalTokenCount: tokenCount.optional(),
    cachedContentTokenCount: tokenCount.optional(),
    thoughtsTokenCount: tokenCount.optional(),
    toolUsePromptTokenCount: tokenCount.optional(),
    promptTokensDetails: z.array(geminiModalityTokenCount).optional(),
    candidatesTokensDetails: z.array(geminiModalityTokenCount).optional(),
    cacheTokensDetails: z.array(geminiModalityTokenCount).optional(),
  })
  .transform((usage) => ({
    ...usage,
    totalTokenCount: usage.totalTokenCount ?? usage.promptTokenCount + usage.candidatesTokenCount + (usage.thoughtsTokenCount ?? 0),
  }));

/** A `generateContent` reply, and each event of a `streamGenerateContent` stream. */
export const geminiGenerateResponse = z.looseObject({
  candidates: z.array(geminiCandidate).optional(),
  usageMetadata: geminiUsageMetadata.optional(),
  modelVersion: z.string().optional(),
  responseId: z.string().optional(),
  promptFeedback: looseRecord.optional(),
});

export type GeminiGenerateResponse = z.infer<typeof geminiGenerateResponse>;
export type GeminiCandidate = z.infer<typeof geminiCandidate>;
export type GeminiUsageMetadata = z.infer<typeof geminiUsageMetadata>;
export type GeminiInlineData = z.infer<typeof geminiInlineData>;

/** The audio parts of a reply (or of one stream event), in order. */
export function geminiInlineAudio(response: GeminiGenerateResponse): GeminiInlineData[] {
  return (response.candidates?.[0]?.content?.parts ?? []).flatMap((part) => (part.inlineData ? [part.inlineData] : []));
}

// ---------------------------------------------------------------------------------------------
// Errors

/** Gemini's (google.rpc) status string for an HTTP status. */
export function geminiStatusText(httpStatus: number): string {
  switch (httpStatus) {
    case 400: return 'INVALID_ARGUMENT';
    case 401: return 'UNAUTHENTICATED';
    case 403: return 'PERMISSION_DENIED';
    case 404: return 'NOT_FOUND';
    case 409: return 'ABORTED';
    case 413: return 'INVALID_ARGUMENT';
    case 415: return 'INVALID_ARGUMENT';
    case 429: return 'RESOURCE_EXHAUSTED';
    case 499: return 'CANCELLED';
    case 501: return 'UNIMPLEMENTED';
    case 502: return 'UNAVAILABLE';
    case 503: return 'UNAVAILABLE';
    case 504: return 'DEADLINE_EXCEEDED';
    default: return httpStatus >= 500 ? 'INTERNAL' : 'FAILED_PRECONDITION';
  }
}

export const geminiErrorBody = z.looseObject({
  error: z.looseObject({
    code: z.number().int(),
    message: z.string(),
    status: z.string(),
    details: z.array(z.unknown()).optional(),
  }),
});

export type GeminiErrorBody = z.infer<typeof geminiErrorBody>;

export function geminiError(httpStatus: number, message: string, details?: unknown[]): GeminiErrorBody {
  return { error: { code: httpStatus, message, status: geminiStatusText(httpStatus), ...(details ? { details } : {}) } };
}
