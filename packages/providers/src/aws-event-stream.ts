/**
 * Reads AWS's binary event stream (`application/vnd.amazon.eventstream`, Bedrock's
 * ConverseStream) as it arrives: each message is framed by its total length, and decoded (its
 * CRCs checked, its headers parsed) by the AWS SDK's own codec (`@smithy/core/event-streams`).
 * An event becomes `{"<event type>": <payload>}`, as the AWS SDK names Converse's stream events
 * (`{"contentBlockDelta": {…}}`), for the operation's mapping to read; an exception message
 * (`:message-type: exception`, a throttling in mid-stream, say) is the `http` failure its type
 * names. The same limits as server-sent events hold (`upstreamLimits`).
 */
import { EventStreamCodec, type Message } from '@smithy/core/event-streams';
import { upstreamFailure } from '@gateway/contracts';
import { upstreamLimits } from './upstream-request.ts';

const utf8 = new TextDecoder();
const encoder = new TextEncoder();
const codec = new EventStreamCodec((bytes) => utf8.decode(bytes), (text) => encoder.encode(text));

/** An exception's type as the HTTP status AWS answers it with before a stream starts. */
const EXCEPTION_STATUS: Record<string, number> = {
  throttlingException: 429,
  serviceUnavailableException: 503,
  internalServerException: 500,
  modelStreamErrorException: 502,
  validationException: 400,
  modelTimeoutException: 504,
};

export async function* readAwsEventStream(body: AsyncIterable<Buffer | Uint8Array>): AsyncGenerator<string> {
  const { maxEventBytes, maxReplyBytes } = upstreamLimits;
  let pending = Buffer.alloc(0);
  let total = 0;
  for await (const piece of body) {
    total += piece.length;
    if (total > maxReplyBytes) throw upstreamFailure.protocol(`the upstream stream is larger than ${maxReplyBytes} bytes (the gateway's limit)`, { ofTheRequest: true });
    pending = pending.length === 0 ? Buffer.from(piece) : Buffer.concat([pending, piece]);
    while (pending.length >= 4) {
      const length = pending.readUInt32BE(0);
      if (length > maxEventBytes) throw upstreamFailure.protocol(`an upstream event is larger than ${maxEventBytes} bytes (the gateway's limit)`, { ofTheRequest: true });
      if (pending.length < length) break;
      yield eventData(decode(pending.subarray(0, length)));
      pending = pending.subarray(length);
    }
  }
  if (pending.length > 0) throw upstreamFailure.connection('the upstream stream ended inside an event');
}

function decode(frame: Buffer): Message {
  try {
    return codec.decode(frame);
  } catch (error) {
    throw upstreamFailure.protocol(`the upstream sent an event-stream message that does not decode (${(error as Error).message})`, { cause: error });
  }
}

function eventData(message: Message): string {
  const header = (name: string) => String(message.headers[name]?.value ?? '');
  const payload = utf8.decode(message.body) || '{}';
  if (header(':message-type') === 'event') return `{${JSON.stringify(header(':event-type'))}:${payload}}`;
  const type = header(':exception-type') || header(':error-code') || 'unknown';
  let detail = '';
  try {
    detail = String((JSON.parse(payload) as { message?: unknown }).message ?? '');
  } catch {
    detail = header(':error-message');
  }
  const status = EXCEPTION_STATUS[type] ?? 502;
  throw upstreamFailure.http(status, `upstream ${type} in the stream${detail ? `: ${detail}` : ''}`, { body: { error: { message: detail, type } } });
}
