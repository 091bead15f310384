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

/**
 * Milliseconds of audio in a reply (or one stream event), of every candidate: a request for 8
 * candidates was charged for the first one's alone when its upstream reported no usage.
 */
export function audioMsOf(response: GeminiGenerateResponse): number {
  let ms = 0;
  for (const candidate of response.candidates ?? []) {
    for (const audio of geminiInlineAudio({ candidates: [candidate] })) ms += pcmDurationMs(base64Bytes(audio.data), pcmFormatFromMimeType(audio.mimeType));
  }
  return ms;
}
