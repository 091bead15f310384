/**
 * The part of every model route after validation and authentication: run the request as a job
 * on a worker queue and answer with its reply, whole or as a stream of server-sent events, in
 * the route's wire format. Shared by the OpenAI and the Gemini paths; each supplies only its
 * payload and its `EventStreamFormat`.
 */
import { Readable } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { GatewayError, type QueueName } from '@gateway/contracts';
import type { JobClient } from '@gateway/queue';
import { clientGoneSignal } from './client-signal.ts';
import type { AdmissionSubject, ModelAdmission } from './admission/model-admission.ts';
import type { ErrorFormat } from './error-formats.ts';

/** How a wire format writes a stream: each chunk, its end, and a failure after the first byte. */
export interface EventStreamFormat {
  /** Bytes for one chunk the worker sent (the chunk is the event's JSON text). */
  chunk(data: string): string;
  /** Bytes after the last chunk (`data: [DONE]` for OpenAI, nothing for Gemini). */
  end(): string;
  /** Bytes for a failure once the stream has begun: the error body as one last event. */
  error(error: GatewayError): string;
  /** The response's Content-Type; server-sent events when unset. */
  contentType?: string;
}

/** Server-sent events, `data: <json>` per event, in the error body of `errorFormat`. */
export function serverSentEvents(errorFormat: ErrorFormat, options: { doneMarker?: string; eol?: string } = {}): EventStreamFormat {
  const eol = options.eol ?? '\n\n';
  const done = options.doneMarker === undefined ? '' : `data: ${options.doneMarker}${eol}`;
  return {
    chunk: (data) => `data: ${data}${eol}`,
    end: () => done,
    error: (error) => `data: ${JSON.stringify(errorFormat.body(error))}${eol}`,
  };
}

export interface ModelRelayOptions<P> {
  jobs: JobClient;
  queue: QueueName;
  payload: P;
  timeoutMs: number;
  /** Decides priority, rate limit and backlog before the job is enqueued. */
  admission: ModelAdmission;
  /** The caller, from its API key. */
  holder: AdmissionSubject;
  /** Set to relay the reply as a stream in this format; unset for one JSON reply. */
  stream?: EventStreamFormat;
  /**
   * Bytes of the answer buffered for the client (RESPONSE_BUFFER_BYTES): a larger whole reply
   * is written a slice at a time as the client reads; a stream whose client falls this far
   * behind, though its job is paused, is dropped.
   */
  responseBufferBytes: number;
}

/** A whole reply's slices: each about `size` UTF-16 units, never splitting a surrogate pair. */
function* slices(text: string, size: number): Generator<string> {
  for (let at = 0; at < text.length;) {
    let end = Math.min(at + size, text.length);
    const last = text.charCodeAt(end - 1);
    if (last >= 0xd800 && last <= 0xdbff && end < text.length) end++;
    yield text.slice(at, end);
    at = end;
  }
}

const streamHeaders = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache',
  connection: 'keep-alive',
  'x-accel-buffering': 'no',
};

/**
 * Enqueues the job and answers the client with its reply.
 *
 * Whole: sends the worker's result, its JSON text as the worker wrote it; a failure rejects with
 * the `GatewayError`, which the app's error handler renders in the route's wire format.
 *
 * Streamed: the response headers are written with the first chunk, and every chunk as it comes.
 * A failure before the first chunk is an ordinary error reply (so the worker may still fail
 * over); after it, the stream ends with an error event. A client that goes away cancels the job,
 * which aborts the worker's upstream call.
 */
export async function relayModelJob<P>(request: FastifyRequest, reply: FastifyReply, options: ModelRelayOptions<P>): Promise<unknown> {
  const priority = await options.admission.admit(request.headers, options.holder, options.queue);
  const signal = clientGoneSignal(request);
  const format = options.stream;
  if (!format) {
    // The worker's JSON goes to the client as it is: no parse and serialisation in between.
    const json = await options.jobs.requestText(options.queue, options.payload, { requestId: request.id, timeoutMs: options.timeoutMs, signal, priority });
    reply.type('application/json; charset=utf-8');
    if (json.length <= options.responseBufferBytes) return reply.send(json);
    // Large: a slice at a time as the socket drains, so the gateway buffers one slice (and the
    // text it already holds), not a second copy of the whole reply per slow client.
    reply.header('content-length', Buffer.byteLength(json));
    return reply.send(Readable.from(slices(json, 64 * 1024), { objectMode: false }));
  }

  const raw = reply.raw;
  let started = false;
  /** Set while the client's socket is full: resolves when it has drained (or closed). */
  let draining: Promise<void> | undefined;
  const drained = () => {
    draining ??= new Promise<void>((resolve) => {
      const done = () => {
        raw.off('drain', done);
        raw.off('close', done);
        draining = undefined;
        resolve();
      };
      raw.on('drain', done);
      raw.on('close', done);
    });
    return draining;
  };
  const begin = () => {
    if (started) return;
    started = true;
    reply.hijack();
    const headers = format.contentType ? { ...streamHeaders, 'content-type': format.contentType } : streamHeaders;
    raw.writeHead(200, { ...(reply.getHeaders() as Record<string, string>), ...headers });
  };
  try {
    await options.jobs.requestText(options.queue, options.payload, {
      requestId: request.id,
      priority,
      timeoutMs: options.timeoutMs,
      signal,
      onChunk: (chunk) => {
        begin();
        // A client that reads slower than the upstream writes pauses the job (backpressure)
        // instead of having the gateway buffer for it. What was already on its way still comes;
        // past the buffer cap the client is dropped (the job is cancelled as it goes).
        if (raw.destroyed) return;
        if (raw.write(format.chunk(chunk))) return;
        if ((raw.socket?.writableLength ?? raw.writableLength) > options.responseBufferBytes) {
          request.log.warn({ buffered: raw.socket?.writableLength }, 'a stream\'s client fell too far behind and was dropped');
          raw.destroy();
          return;
        }
        return drained();
      },
    });
    begin();
    raw.end(format.end());
  } catch (error) {
    const failure = GatewayError.from(error);
    if (!started) throw failure;
    if (!raw.destroyed && !raw.writableEnded) raw.end(format.error(failure));
    request.log.warn({ status: failure.status, code: failure.code }, 'stream ended by a failure after its first chunk');
  }
  return reply;
}
