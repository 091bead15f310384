/**
 * OpenAI's door on the one model route (`model-endpoint-route.ts`): its event streams. A text
 * endpoint streams server-sent events ending `data: [DONE]`. `/v1/audio/speech` always streams,
 * as the audio worker sends it: the audio's bytes (labelled with the Content-Type of what they
 * are, which the worker names), or, with `stream_format: "sse"`, `speech.audio.delta` events and
 * a last `speech.audio.done` with the usage. Audio begins before the whole of it exists, so a
 * failure after the first byte cuts the connection: the client sees a broken reply, never a
 * short one that looks whole.
 */
import {
  readAudioPiece,
  speechContentTypes,
  type SpeechAudioDelta,
  type SpeechAudioDone,
  type SpeechEnd,
  type SpeechRequest,
} from '@gateway/contracts';
import { openaiFormat } from '../http/error-formats.ts';
import { serverSentEvents, type EventStreamFormat } from './model-relay.ts';
import type { DoorAdapter } from './model-endpoint-route.ts';

const openaiEventStream = serverSentEvents(openaiFormat, { doneMarker: '[DONE]' });

/**
 * The audio itself, a piece at a time (the worker sends each as base64), labelled with what the
 * worker says its first piece is (what the upstream sent, or what the worker encoded), else
 * with the format asked for.
 */
const audioStream = (asked: string): EventStreamFormat => ({
  chunk: (data) => Buffer.from(readAudioPiece(data).base64, 'base64'),
  end: () => '',
  error: () => undefined,
  contentType: (first) => (first === undefined ? undefined : readAudioPiece(first).mediaType) ?? asked,
});

/** OpenAI's speech events. */
const speechEvents: EventStreamFormat = {
  chunk: (data) => `data: ${JSON.stringify({ type: 'speech.audio.delta', audio: readAudioPiece(data).base64 } satisfies SpeechAudioDelta)}\n\n`,
  end: (result) => `data: ${JSON.stringify({ type: 'speech.audio.done', usage: (JSON.parse(result) as SpeechEnd).usage } satisfies SpeechAudioDone)}\n\n`,
  error: (error) => `data: ${JSON.stringify(openaiFormat.body(error))}\n\n`,
};

const speechStream = (body: SpeechRequest) => (body.stream_format === 'sse' ? speechEvents : audioStream(speechContentTypes[body.response_format ?? 'mp3']));

export const openaiDoor: DoorAdapter = {
  eventStream: (_request, body, endpoint) => (endpoint.operation === 'speech' ? speechStream(body as SpeechRequest) : openaiEventStream),
};
