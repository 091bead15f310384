/**
 * The mock Gemini upstream's speech (mock-gemini-upstream.ts serves it for every body that asks
 * for audio). The audio is real: 24 kHz, 16-bit little-endian mono PCM of a 440 Hz tone, base64
 * in `inlineData` with mimeType `audio/L16;codec=pcm;rate=24000`. Its length follows the text:
 *
 *     characters = code points of all contents[].parts[].text
 *     durationMs = characters × msPerCharacter            (msPerCharacter defaults to 50)
 *     pcmBytes   = durationMs × 48                         (24 samples per ms × 2 bytes)
 *
 * so with the default 2,400 bytes of PCM per character (`mockSpeech` computes it). Usage counts
 * like Gemini's: promptTokenCount = ceil(characters / 4), candidatesTokenCount = ceil(durationMs /
 * 40) (25 audio tokens per second). A fixed `pcmBytes` overrides the formula for memory tests,
 * and a `speak` function (the demo's offline speech synthesizer) replaces the tone with speech.
 */
import { randomUUID } from 'node:crypto';
import { GEMINI_PCM_MIME_TYPE, geminiRequestText, type GeminiGenerateRequest } from '@gateway/contracts';

/** How the mock speaks. */
export interface MockSpeechBehaviour {
  /** Milliseconds of audio per character of text. Default 50. */
  msPerCharacter: number;
  /** A fixed PCM size for every reply, whatever the text (base64 is 4/3 of it). Default null. */
  pcmBytes: number | null;
  /** Milliseconds of audio per streamed event. Default 1000. */
  streamChunkMs: number;
  /** Include safetyRatings in candidates (Gemini's TTS models leave them out). Default false. */
  safetyRatings: boolean;
}

export interface MockSpeech {
  characters: number;
  durationMs: number;
  pcmBytes: number;
  promptTokenCount: number;
  candidatesTokenCount: number;
}

const SAMPLE_RATE = 24_000;
const BYTES_PER_MS = (SAMPLE_RATE / 1000) * 2;
const DEFAULT_MS_PER_CHARACTER = 50;

/** The audio the mock produces for `text` (see the formula at the top of this file). */
export function mockSpeech(text: string, msPerCharacter = DEFAULT_MS_PER_CHARACTER, fixedPcmBytes: number | null = null): MockSpeech {
  const characters = [...text].length;
  const pcmBytes = fixedPcmBytes !== null ? fixedPcmBytes - (fixedPcmBytes % 2) : Math.round(characters * msPerCharacter * (BYTES_PER_MS / 2)) * 2;
  const durationMs = pcmBytes / BYTES_PER_MS;
  return {
    characters,
    durationMs,
    pcmBytes,
    promptTokenCount: Math.max(1, Math.ceil(characters / 4)),
    candidatesTokenCount: Math.ceil(durationMs / 40),
  };
}

/** `bytes` of a 440 Hz tone as 16-bit little-endian PCM at 24 kHz. */
export function sinePcm(bytes: number): Buffer {
  const pcm = Buffer.alloc(bytes - (bytes % 2));
  for (let i = 0; i < pcm.length / 2; i++) {
    pcm.writeInt16LE(Math.round(Math.sin((2 * Math.PI * 440 * i) / SAMPLE_RATE) * 8000), i * 2);
  }
  return pcm;
}

/**
 * Tones are cached by length, since a burst of identical 1 MB replies would otherwise spend its
 * time computing sines and the benchmark would measure the mock.
 */
const toneCache = new Map<number, { pcm: Buffer; base64: string }>();
function tone(bytes: number) {
  let cached = toneCache.get(bytes);
  if (!cached) {
    const pcm = sinePcm(bytes);
    cached = { pcm, base64: pcm.toString('base64') };
    if (toneCache.size >= 16) toneCache.delete(toneCache.keys().next().value!);
    toneCache.set(bytes, cached);
  }
  return cached;
}

const SAFETY_RATINGS = [
  { category: 'HARM_CATEGORY_HATE_SPEECH', probability: 'NEGLIGIBLE' },
  { category: 'HARM_CATEGORY_DANGEROUS_CONTENT', probability: 'NEGLIGIBLE' },
  { category: 'HARM_CATEGORY_HARASSMENT', probability: 'NEGLIGIBLE' },
  { category: 'HARM_CATEGORY_SEXUALLY_EXPLICIT', probability: 'NEGLIGIBLE' },
];

/** One spoken answer: its responses whole, or a piece of audio each. */
export interface SpokenAnswer {
  /** The whole answer, as `generateContent` sends it. */
  whole(): Record<string, unknown>;
  /** The responses of a stream, `streamChunkMs` of audio each, the last with finishReason and usage. */
  pieces(): Generator<Record<string, unknown>>;
}

/** Speaks `request`'s text: the cached tone, or what `speak` says. */
export async function spokenAnswer(model: string, request: GeminiGenerateRequest, b: MockSpeechBehaviour, speak?: (text: string) => Promise<Buffer>): Promise<SpokenAnswer> {
  const text = geminiRequestText(request);
  const spoken = speak ? await speak(text) : undefined;
  const speech = mockSpeech(text, b.msPerCharacter, spoken ? spoken.length : b.pcmBytes);
  const cached = spoken ? undefined : tone(speech.pcmBytes);
  const pcm = spoken ?? cached!.pcm;
  const usageMetadata = {
    promptTokenCount: speech.promptTokenCount,
    candidatesTokenCount: speech.candidatesTokenCount,
    totalTokenCount: speech.promptTokenCount + speech.candidatesTokenCount,
    promptTokensDetails: [{ modality: 'TEXT', tokenCount: speech.promptTokenCount }],
    candidatesTokensDetails: [{ modality: 'AUDIO', tokenCount: speech.candidatesTokenCount }],
  };
  const envelope = { modelVersion: model, responseId: randomUUID().replaceAll('-', '').slice(0, 22) };
  const candidate = (data: string, last: boolean) => ({
    content: { role: 'model', parts: [{ inlineData: { mimeType: GEMINI_PCM_MIME_TYPE, data } }] },
    ...(last ? { finishReason: 'STOP' } : {}),
    ...(b.safetyRatings ? { safetyRatings: SAFETY_RATINGS } : {}),
    index: 0,
  });
  return {
    whole: () => ({ candidates: [candidate(cached?.base64 ?? pcm.toString('base64'), true)], usageMetadata, ...envelope }),
    *pieces() {
      const step = Math.max(2, Math.round(b.streamChunkMs * (BYTES_PER_MS / 2)) * 2);
      let offset = 0;
      do {
        const end = Math.min(offset + step, pcm.length);
        const last = end >= pcm.length;
        yield { candidates: [candidate(pcm.subarray(offset, end).toString('base64'), last)], ...(last ? { usageMetadata } : {}), ...envelope };
        offset = end;
      } while (offset < pcm.length);
    },
  };
}
