import { createParser } from 'eventsource-parser';
import { upstreamLimits } from './upstream-request.ts';
import { upstreamFailure } from '@gateway/contracts';

/**
 * Reads a server-sent-events body as it arrives and yields the data of each event, so a relay
 * can pass every event on before the next one comes. Parsing is `eventsource-parser`'s (linear in
 * the bytes, however large an event). One event may hold at most `upstreamLimits.maxEventBytes`
 * (an event that never ends would grow without bound), and the whole stream at most
 * `maxReplyBytes`; past either it throws a protocol error. An event the upstream left without
 * its closing blank line at the end of the stream still counts.
 */
export async function* readServerSentEvents(body: AsyncIterable<Buffer | Uint8Array>): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  const { maxEventBytes, maxReplyBytes } = upstreamLimits;
  const ready: string[] = [];
  /** Bytes since the last event ended: the size of the one being received. */
  let sinceEvent = 0;
  let total = 0;
  /** An event past the limit that came whole within one piece, which `sinceEvent` alone does not see. */
  let oversized = false;
  const parser = createParser({
    onEvent: (event) => {
      if (event.data.length > maxEventBytes / 3 && Buffer.byteLength(event.data) > maxEventBytes) oversized = true;
      ready.push(event.data);
      sinceEvent = 0;
    },
  });
  for await (const piece of body) {
    total += piece.length;
    sinceEvent += piece.length;
    parser.feed(decoder.decode(piece, { stream: true }));
    // Checked before the piece's events are passed on: a refused event never reaches the client.
    if (oversized || sinceEvent > maxEventBytes) throw eventTooLarge(maxEventBytes);
    if (total > maxReplyBytes) throw upstreamFailure.protocol(`the upstream stream is larger than ${maxReplyBytes} bytes (the gateway's limit)`, { ofTheRequest: true });
    yield* ready.splice(0);
  }
  parser.feed(`${decoder.decode()}\n\n`);
  if (oversized) throw eventTooLarge(maxEventBytes);
  yield* ready.splice(0);
}

const eventTooLarge = (limit: number) => upstreamFailure.protocol(`an upstream event is larger than ${limit} bytes (the gateway's limit)`, { ofTheRequest: true });
