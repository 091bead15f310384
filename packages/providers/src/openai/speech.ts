/**
 * OpenAI's text-to-speech against an OpenAI-style upstream, passed through: the body with the
 * channel's model, and the audio bytes relayed as they come (`streamUpstreamAudio`), in the
 * format the client asked for. The upstream is always asked for raw audio; server-sent events,
 * when the client wants them, are made by the worker around the bytes.
 */
import { upstreamFailure, type SpeechRequest } from '@gateway/contracts';
import type { OperationMapping } from '../provider.ts';

const notJson = () => {
  throw upstreamFailure.protocol('speech is audio, not JSON');
};

export const speech: OperationMapping<SpeechRequest, never, never> = {
  toUpstream: (request, upstreamModel) => ({ ...request, model: upstreamModel, stream_format: 'audio' }),
  fromReply: notJson,
  fromEvent: notJson,
  streamEnd: { name: 'the end of the audio' },
};
