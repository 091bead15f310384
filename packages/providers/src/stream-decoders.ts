/**
 * How a stream's framing is read, one decoder per `StreamEncoding`: each yields the data of one
 * upstream event at a time (JSON text, or a marker such as OpenAI's `[DONE]`), for the
 * operation's mapping to read. A provider names its encoding in its `api.ts`.
 */
import type { StreamEncoding } from './provider.ts';
import { readAwsEventStream } from './aws-event-stream.ts';
import { readServerSentEvents } from './server-sent-events.ts';

export type StreamDecoder = (body: AsyncIterable<Buffer | Uint8Array>) => AsyncIterable<string>;

export const streamDecoders: Record<StreamEncoding, StreamDecoder> = {
  sse: readServerSentEvents,
  'aws-eventstream': readAwsEventStream,
};
