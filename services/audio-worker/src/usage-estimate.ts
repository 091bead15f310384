/**
 * How much audio a Gemini reply holds, for the usage estimate (`estimateAudioTokens` in
 * @gateway/contracts) when the upstream reports none or a stream is cut short.
 */
import { geminiInlineAudio, pcmDurationMs, pcmFormatFromMimeType, type GeminiGenerateResponse } from '@gateway/contracts';

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
