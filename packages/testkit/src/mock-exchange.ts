/**
 * One request a mock upstream answers, from its arrival to its connection's close: the body read,
 * a JSON failure with the provider's headers, a connection broken on purpose, and the counting of
 * how it ended (answered whole, failed on purpose, or left by its client).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { MockCounters } from './mock-counters.ts';
import { receiveRequest } from './mock-request-body.ts';
import type { MockExchange, ReceivedRequest } from './mock-wire-format.ts';

/** The wire format's `MockExchange`, and the base's mark that the answer is the format's own. */
export interface OpenExchange extends MockExchange {
  /** The answer from here on is the wire format's (not a refusal, not a failure on purpose): counted completed once sent whole with a 2xx. */
  markServed(): void;
}

/** Reads the request and opens its exchange; the counters learn how it ended when its connection closes. */
export async function openExchange(
  req: IncomingMessage,
  res: ServerResponse,
  counters: MockCounters,
  headersOf: (request: ReceivedRequest) => Record<string, string> | undefined,
): Promise<OpenExchange> {
  const gone = new AbortController();
  let served = false;
  let broken = false;
  // Listened to before the body is read: a client that leaves mid-body is counted as aborted.
  res.on('close', () => {
    if (res.writableFinished) {
      if (served && res.statusCode < 300) counters.completed++;
    } else if (!broken) counters.aborted++;
    gone.abort();
  });
  const request = await receiveRequest(req);
  const fail = (status: number, body: unknown, retryAfter?: number, extra?: Record<string, string>) => {
    const headers: Record<string, string> = { 'content-type': 'application/json', ...headersOf(request), ...extra };
    if (retryAfter !== undefined) headers['retry-after'] = String(retryAfter);
    res.writeHead(status, headers).end(JSON.stringify(body));
  };
  const breakConnection = () => {
    if (broken) return;
    broken = true;
    counters.failed++;
    res.destroy();
  };
  return { request, res, gone: gone.signal, fail, breakConnection, markServed: () => { served = true; } };
}
