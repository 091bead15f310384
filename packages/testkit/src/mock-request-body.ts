/** How a mock upstream reads a request: its body, bounded, and as JSON when it is an object. */
import type { IncomingMessage } from 'node:http';
import type { ReceivedRequest } from './mock-wire-format.ts';

/** The largest body a mock reads; past it the request fails (a mock never holds a flood). */
export const MAX_BODY_BYTES = 20 * 1024 * 1024;

export async function readBody(req: IncomingMessage): Promise<string> {
  const parts: Buffer[] = [];
  let size = 0;
  for await (const part of req as AsyncIterable<Buffer>) {
    size += part.length;
    if (size > MAX_BODY_BYTES) throw new Error('request body too large');
    parts.push(part);
  }
  return Buffer.concat(parts).toString('utf8');
}

/** The request as it arrived, its body read whole. */
export async function receiveRequest(req: IncomingMessage): Promise<ReceivedRequest> {
  const raw = await readBody(req);
  return { method: req.method ?? '', path: req.url ?? '', headers: req.headers, raw, json: parseObject(raw), at: Date.now() };
}

/** An empty body is an empty object; a body that is not a JSON object is undefined. */
function parseObject(raw: string): Record<string, unknown> | undefined {
  if (!raw) return {};
  try {
    const value: unknown = JSON.parse(raw);
    return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}
