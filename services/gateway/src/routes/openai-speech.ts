/**
 * `POST /v1/audio/speech`, OpenAI's text-to-speech: validated, authorised for the model, run on
 * the audio queue, and relayed as the audio worker sends it: the audio's bytes (labelled with the
 * Content-Type of what they are, which the worker names), or, with `stream_format: "sse"`,
 * `speech.audio.delta` events and a last `speech.audio.done` with the usage. Audio begins before the whole of it exists, so a failure
 * after the first byte cuts the connection: the client sees a broken reply, never a short one
 * that looks whole.
 */
import type { FastifyInstance } from 'fastify';
import {
  openaiSpeechWorstCase,
  parseOrThrow,
  QueueName,
  readAudioPiece,
  speechContentTypes,
  speechRequestSchema,
  type AudioJobPayload,
  type SpeechAudioDelta,
  type SpeechAudioDone,
  type SpeechEnd,
} from '@gateway/contracts';
import { callerOf } from '@gateway/admission';
import { keyHolderOf } from '../auth/request-auth.ts';
import { relayOptionsOf, type ModelApiOptions } from '../plugins/model-api-options.ts';
import { openaiFormat } from '../error-formats.ts';
import { admissionGate, relayModelJob, type EventStreamFormat } from '../model-relay.ts';

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

export function openaiSpeechRoutes(app: FastifyInstance, options: ModelApiOptions): void {
  app.post('/audio/speech', { bodyLimit: options.bodyLimitBytes, onRequest: admissionGate(options) }, async (request, reply) => {
    const holder = keyHolderOf(request);
    const body = parseOrThrow(speechRequestSchema, request.body);
    options.apiKeys.authorizeModel(holder, body.model);
    const payload: AudioJobPayload = { caller: callerOf(holder), operation: 'speech', request: body };
    return relayModelJob(request, reply, {
      ...relayOptionsOf(options),
      queue: QueueName.audio,
      payload,
      holder,
      worstCase: openaiSpeechWorstCase(body),
      stream: body.stream_format === 'sse' ? speechEvents : audioStream(speechContentTypes[body.response_format ?? 'mp3']),
    });
  });
}
