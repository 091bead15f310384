/**
 * Usage for when a Gemini-style upstream reports none (or a stream is cut short), so the
 * request can still be charged. Only used for charging and for filling in a missing
 * `usageMetadata`; an upstream's own counts always win.
 */
import { geminiInlineAudio, pcmDurationMs, pcmFormatFromMimeType, type GeminiGenerateResponse } from '@gateway/contracts';

/** Gemini counts 32 tokens per second of audio. */
const AUDIO_TOKENS_PER_SECOND = 32;

/** About four characters per token, the usual rule of thumb for text. */
export function estimateTextTokens(text: string): number {
  return Math.max(1, Math.ceil(text.length / 4));
}

/** Bytes a base64 string decodes to, without decoding it. */
export function base64Bytes(data: string): number {
  const padding = data.endsWith('==') ? 2 : data.endsWith('=') ? 1 : 0;
  return Math.max(0, Math.floor((data.length * 3) / 4) - padding);
}

/** Milliseconds of audio in a reply (or one stream event). */
export function audioMsOf(response: GeminiGenerateResponse): number {
  let ms = 0;
  for (const audio of geminiInlineAudio(response)) ms += pcmDurationMs(base64Bytes(audio.data), pcmFormatFromMimeType(audio.mimeType));
  return ms;
}

export function estimateAudioTokens(audioMs: number): number {
  return Math.ceil((audioMs / 1000) * AUDIO_TOKENS_PER_SECOND);
}
