import { upstreamLimits } from './upstream-request.ts';
import { UpstreamError } from './upstream-error.ts';

/**
 * Reads a server-sent-events body as it arrives and yields the data of each event, so a relay
 * can pass every event on before the next one comes. One event may hold at most
 * `upstreamLimits.maxEventBytes` (an event that never ends would grow without bound), and the
 * whole stream at most `maxReplyBytes`; past either it throws a protocol error. Each piece is
 * searched for an event's end only where it could be (from just before the new text), so a
 * large event costs linear time, not quadratic.
 */
export async function* readServerSentEvents(body: AsyncIterable<Buffer | Uint8Array>, onProgress?: () => void): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  const { maxEventBytes, maxReplyBytes } = upstreamLimits;
  let buffer = '';
  let searchFrom = 0;
  let total = 0;
  for await (const piece of body) {
    onProgress?.();
    total += piece.length;
    buffer += decoder.decode(piece, { stream: true });
    let end: number;
    while ((end = eventEnd(buffer, searchFrom)) >= 0) {
      const raw = buffer.slice(0, end);
      buffer = buffer.slice(end).replace(/^(\r\n\r\n|\n\n|\r\r)/, '');
      searchFrom = 0;
      const data = eventData(raw);
      if (data !== undefined) yield data;
    }
    // A separator is at most 4 characters: the next search starts where one could begin.
    searchFrom = Math.max(0, buffer.length - 3);
    if (buffer.length > maxEventBytes) throw new UpstreamError({ kind: 'protocol', message: `an upstream event is larger than ${maxEventBytes} bytes (the gateway's limit)` });
    if (total > maxReplyBytes) throw new UpstreamError({ kind: 'protocol', message: `the upstream stream is larger than ${maxReplyBytes} bytes (the gateway's limit)` });
  }
  buffer += decoder.decode();
  const data = eventData(buffer);
  if (data !== undefined && buffer.trim()) yield data;
}

function eventEnd(buffer: string, from: number): number {
  const candidates = [buffer.indexOf('\n\n', from), buffer.indexOf('\r\n\r\n', from), buffer.indexOf('\r\r', from)].filter((i) => i >= 0);
  return candidates.length ? Math.min(...candidates) : -1;
}

/** The event's `data:` lines joined by newlines; undefined for an event without data. */
function eventData(raw: string): string | undefined {
  let data: string | undefined;
  for (const line of raw.split(/\r\n|\r|\n/)) {
    if (!line.startsWith('data')) continue;
    const colon = line.indexOf(':');
    if (colon !== 4) continue;
    let value = line.slice(5);
    if (value.startsWith(' ')) value = value.slice(1);
    data = data === undefined ? value : `${data}\n${value}`;
  }
  return data;
}
