/**
 * OpenAI's text-to-speech on one chosen channel. From a provider that speaks it (an openai
 * channel), the audio bytes are relayed as they come, labelled with the upstream's Content-Type
 * (an upstream that answers another format than asked is not passed off as the one asked). From
 * a Gemini speech model, its PCM events are read as they come and encoded (`@gateway/audio`,
 * FFmpeg processes off the event loop) into the format and speed asked for, and labelled so.
 * Either way the audio goes to the client a piece at a time (the relay commits the attempt at the
 * first), the first naming the audio's media type (`labelledAudio`), and the job's result is the
 * usage, which `stream_format: "sse"` ends with. A WAV the client reads as one file is sent
 * whole, with its real sizes (`wholeWav`).
 */
import { encodeSpeech, wholeWav } from '@gateway/audio';
import {
  audioMediaType,
  estimateAudioTokens,
  estimateTokens,
  geminiInlineAudio,
  labelledAudio,
  pcmDurationMs,
  speechContentTypes,
  type GeminiGenerateResponse,
  type SpeechEnd,
  type SpeechRequest,
} from '@gateway/contracts';
import { operationFor, streamUpstream, streamUpstreamAudio, type ProviderOperation } from '@gateway/providers';
import type { RouteTarget, Usage } from '@gateway/routing';
import type { ModelAnswer, Piece } from '@gateway/worker-runtime';

interface Counted {
  inputTokens: number;
  outputTokens: number;
}

const WAV_TYPES = /^audio\/(?:wav|wave|x-wav|vnd\.wave)\b/i;

/** OpenAI prices speech by its input: what an upstream that reports nothing is charged. */
export const speechPromptTokens = (request: SpeechRequest) => estimateTokens(request.input + (request.instructions ?? ''));

export async function openSpeech(target: RouteTarget, request: SpeechRequest): Promise<ModelAnswer<SpeechEnd>> {
  const operation = operationFor('speech', target.channel.type);
  const counted: Counted = { inputTokens: speechPromptTokens(request), outputTokens: 0 };
  const format = request.response_format ?? 'mp3';
  let audio: AsyncIterable<Buffer>;
  let mediaType: string;
  if (operation.replies === 'audio') {
    const upstream = await streamUpstreamAudio(operation as ProviderOperation<SpeechRequest, never, never>, target, request);
    audio = upstream.bytes;
    mediaType = audioMediaType(upstream.contentType) ?? speechContentTypes[format];
  } else {
    const pcm = geminiPcm(await streamUpstream(operation as ProviderOperation<SpeechRequest, GeminiGenerateResponse, GeminiGenerateResponse>, target, request), counted);
    audio = encodeSpeech(pcm, { format, speed: request.speed ?? 1, signal: target.signal });
    mediaType = speechContentTypes[format];
  }
  // Server-sent events are a stream by nature and keep the streaming header's unknown sizes.
  if (request.stream_format !== 'sse' && WAV_TYPES.test(mediaType)) audio = wholeWav(audio);
  return {
    pieces: audioPieces(audio, mediaType, counted),
    end: () => ({ done: true, usage: { input_tokens: counted.inputTokens, output_tokens: counted.outputTokens, total_tokens: counted.inputTokens + counted.outputTokens } }),
  };
}

/** The audio as the client's pieces (base64, the first labelled), each with the usage counted so far, and the final count last. */
async function* audioPieces(audio: AsyncIterable<Buffer>, mediaType: string, counted: Counted): AsyncGenerator<Piece> {
  const usage = (): Usage => ({ totalTokens: counted.inputTokens + counted.outputTokens, promptTokens: counted.inputTokens, completionTokens: counted.outputTokens });
  let first = true;
  for await (const chunk of audio) {
    const base64 = chunk.toString('base64');
    yield { data: first ? labelledAudio(mediaType, base64) : base64, usage: usage() };
    first = false;
  }
  yield { usage: usage() };
}

/**
 * The PCM of Gemini's events, as they come. Until its last event reports `usageMetadata`, the
 * output is counted from the audio so far, so a stream cut short is still charged.
 */
async function* geminiPcm(events: AsyncIterable<GeminiGenerateResponse>, counted: Counted): AsyncGenerator<Buffer> {
  let pcmBytes = 0;
  for await (const event of events) {
    for (const piece of geminiInlineAudio(event)) {
      const pcm = Buffer.from(piece.data, 'base64');
      pcmBytes += pcm.length;
      if (pcm.length > 0) yield pcm;
    }
    if (event.usageMetadata) {
      counted.inputTokens = event.usageMetadata.promptTokenCount ?? counted.inputTokens;
      counted.outputTokens = event.usageMetadata.candidatesTokenCount ?? Math.max(0, event.usageMetadata.totalTokenCount - counted.inputTokens);
    } else {
      counted.outputTokens = estimateAudioTokens(pcmDurationMs(pcmBytes));
    }
  }
}
