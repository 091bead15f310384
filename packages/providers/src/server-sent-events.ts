/**
 * Reads a server-sent-events body as it arrives and yields the data of each event, so a relay
 * can pass every event on before the next one comes.
 */
export async function* readServerSentEvents(body: AsyncIterable<Buffer | Uint8Array>, onProgress?: () => void): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const piece of body) {
    onProgress?.();
    buffer += decoder.decode(piece, { stream: true });
    let end: number;
    while ((end = eventEnd(buffer)) >= 0) {
      const raw = buffer.slice(0, end);
      buffer = buffer.slice(end).replace(/^(\r\n\r\n|\n\n|\r\r)/, '');
      const data = eventData(raw);
      if (data !== undefined) yield data;
    }
  }
  buffer += decoder.decode();
  const data = eventData(buffer);
  if (data !== undefined && buffer.trim()) yield data;
}

function eventEnd(buffer: string): number {
  const candidates = [buffer.indexOf('\n\n'), buffer.indexOf('\r\n\r\n'), buffer.indexOf('\r\r')].filter((i) => i >= 0);
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
