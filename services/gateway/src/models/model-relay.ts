/**
 * The part of every model route after validation and authentication: run the request as a job
 * on a worker queue and answer with its reply, whole or as a stream of server-sent events, in
 * the route's wire format. Shared by the OpenAI and the Gemini paths; each supplies only its
 * payload and its `EventStreamFormat`.
 */
import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { CLIENT_CLOSED_STATUS, GatewayError, overloaded, routeOfPayload, type ModelCaller, type QueueName, type RequestLogRow } from '@gateway/contracts';
import { beforeDeadline, textSlices, type CaughtUp, type JobClient, type RemovedJob } from '@gateway/queue';
import { clientGoneSignal, cutReason } from '../http/client-signal.ts';
import { STOPPED } from '../http/requests-in-flight.ts';
import { priorityOf, type ModelAdmission } from '@gateway/admission';
import type { KeyHolder } from '../auth/api-key.ts';
import { keyHolderOf } from '../auth/request-auth.ts';
import type { ErrorFormat } from '../http/error-formats.ts';
import type { FairTurns } from '../intake/fair-turns.ts';
import type { IntakeWindow } from '../intake/intake-window.ts';
import { RelaySpans } from './relay-spans.ts';
import { endSpan, type Span } from '@gateway/tracing';

/**
 * A stream's credit window, in characters, for a buffer cap of `responseBufferBytes`: a
 * thirty-second of it (a character is at most 3 bytes, 4 for a pair, so what a worker may send
 * ahead stays well inside the cap, and 40 clients that read nothing hold 40 windows, 128 Ki
 * characters each by default, not 40 caps; an eighth, 512 Ki, left 40 deaf streams' gateway
 * +65 MB against +41 MB, and a reader of a 24 MB stream took 1.25 to 1.34 s against 1.12 to
 * 1.25 s, single runs), and at least
 * 64 Ki (RESPONSE_BUFFER_BYTES may be as small as 16 KiB, and a smaller window would cost a
 * credit message every few chunks).
 */
export const streamWindowOf = (responseBufferBytes: number) => Math.max(64 * 1024, Math.floor(responseBufferBytes / 32));
const CLIENT_GONE = Promise.resolve('gone' as const);

/** How a wire format writes a stream: each chunk, its end, and a failure after the first byte. */
export interface EventStreamFormat {
  /** Bytes for one chunk the worker sent (the chunk is the event's JSON text, or base64 audio). */
  chunk(data: string): string | Buffer;
  /** Bytes after the last chunk (`data: [DONE]` for OpenAI, nothing for Gemini), from the job's result. */
  end(result: string): string;
  /**
   * Bytes for a failure once the stream has begun: the error body as one last event; undefined
   * where the format has no place for one (raw audio), and the connection is cut instead, so the
   * client sees a broken reply, never a whole-looking one.
   */
  error(error: GatewayError): string | undefined;
  /**
   * The response's Content-Type; server-sent events when unset. A function reads it from the
   * first chunk (undefined when none came): a speech's audio is labelled by its worker.
   */
  contentType?: string | ((firstChunk: string | undefined) => string);
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

/** Where the gateway's own request log rows go (the process's RequestLogWriter). */
export interface RequestLogSink {
  record(row: RequestLogRow): void;
}

/** A model job's payload, as the log reads it. */
type RelayedPayload = { caller: ModelCaller; operation?: string; method?: string; model?: string; request: unknown };

export interface ModelRelayOptions<P extends RelayedPayload> {
  jobs: JobClient;
  queue: QueueName;
  payload: P;
  timeoutMs: number;
  /** Decides priority, rate limits, backlog and the quota held before the job is enqueued. */
  admission: ModelAdmission;
  /** At most so many requests of one user between here and their enqueue (intake-window.ts); none when unset. */
  intake?: IntakeWindow;
  /** The caller, from its API key. */
  holder: KeyHolder;
  /** The most quota the request may use (held on its key's and user's quota while it runs). */
  worstCase: number;
  /** The model asked for: the worst case's cost on a budget in money is at its price. */
  model: string;
  /** Set to relay the reply as a stream in this format; unset for one JSON reply. */
  stream?: EventStreamFormat;
  /**
   * Bytes of the answer buffered for the client (RESPONSE_BUFFER_BYTES): a larger whole reply
   * is written a slice at a time as the client reads.
   */
  responseBufferBytes: number;
  /** How far a stream's worker may run ahead of what its client has taken (`streamWindowOf`). */
  streamWindowChars: number;
  /** Rows for a request that ends here: refused before its job, or its job removed unrun. */
  requestLog?: RequestLogSink;
  /**
   * The body's JSON as it came, when the payload's `request` is that body as its schema gave it
   * back unchanged: a large payload is stored with these bytes, not a serialisation of the value.
   */
  requestJson?: Buffer;
  /**
   * Run once the answer is complete, before its client is sent the end of it: with the whole
   * JSON of a reply, or nothing at a stream's end, completed or failed after its first chunk (a
   * door that keeps what it answered, as stored responses do, so the client's next request finds
   * it). A failure is logged, not the client's.
   */
  settle?: (whole?: string) => Promise<void>;
}

/** The model the client asked for: a Gemini payload names it apart, the others in their request. */
const modelOf = (payload: RelayedPayload): string => payload.model ?? (payload.request as { model?: string }).model ?? '';

/**
 * The row of a request that never ran on a worker (a worker writes the row of every job it
 * takes): refused by admission, never queued, or removed from its queue unrun.
 */
function logUnrun<P extends RelayedPayload>(request: FastifyRequest, options: ModelRelayOptions<P>, jobId: string, arrivedAt: number, failure: GatewayError, priority: 'interactive' | 'batch', traceId: string | undefined): void {
  const { caller } = options.payload;
  const model = modelOf(options.payload);
  const clientGone = failure.code === 'cancelled';
  options.requestLog?.record({
    created_at: arrivedAt,
    job_id: jobId,
    request_id: request.id,
    user_id: caller.userId,
    token_id: caller.tokenId,
    token_name: caller.tokenName ?? '',
    route: routeOfPayload(options.payload),
    model,
    attempts: [],
    status: clientGone ? CLIENT_CLOSED_STATUS : failure.status,
    error_code: failure.code,
    error_message: failure.message.slice(0, 1000),
    priority,
    streamed: options.stream !== undefined,
    prompt_tokens: 0,
    completion_tokens: 0,
    total_tokens: 0,
    quota: 0,
    total_ms: Date.now() - arrivedAt,
    trace_id: traceId,
  });
}

/**
 * A request refused before it became a job: its row is the refusal log's (refusal-hooks.ts),
 * sampled; one whose client left meanwhile was refused nothing, and has a row of its own (499).
 */
function logIfLeft<P extends RelayedPayload>(request: FastifyRequest, options: ModelRelayOptions<P>, jobId: string, arrivedAt: number, error: unknown, priority: 'interactive' | 'batch', traceId: string | undefined): void {
  const failure = GatewayError.from(error);
  if (failure.code !== 'cancelled') return;
  request.loggedAsJob = true;
  logUnrun(request, options, jobId, arrivedAt, failure, priority, traceId);
}

async function settled<P extends RelayedPayload>(request: FastifyRequest, options: ModelRelayOptions<P>, whole?: string): Promise<void> {
  if (!options.settle) return;
  await options.settle(whole).catch((error: unknown) => request.log.warn({ err: error }, 'an answer\'s settling failed; the client has it all the same'));
}

/**
 * A model route's `onRequest` hook, after its authentication: a key or user that may not start a
 * request now (quota used up, requests in flight at their cap) is refused before its body is read.
 */
export function admissionGate({ admission, turns }: { admission: ModelAdmission; turns: FairTurns }) {
  // A refused body is read and dropped, never parsed or held: closing the connection on it
  // instead would cost the other users less, but a client still sending would see a broken
  // pipe before its 429 (seen once in 100). An admitted one waits for its user's turn of the
  // event loop before its body is read (fair-turns.ts).
  return async (request: FastifyRequest): Promise<void> => {
    const holder = keyHolderOf(request);
    await admission.gate(holder);
    await turns.take(holder.userId);
  };
}

const streamHeaders = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache',
  connection: 'keep-alive',
  'x-accel-buffering': 'no',
};

/** A request its gateway's shutdown ended past its deadline: its client may send it again, to another gateway. */
const stoppedError = () => overloaded('the gateway stopped before this answer was complete; send the request again');

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
export async function relayToWorker<P extends RelayedPayload>(request: FastifyRequest, reply: FastifyReply, options: ModelRelayOptions<P>): Promise<unknown> {
  const spans = new RelaySpans(request, reply, options.payload, modelOf(options.payload));
  try {
    const answered = await relayTraced(request, reply, options, spans);
    spans.end(reply.statusCode);
    return answered;
  } catch (error) {
    const failure = GatewayError.from(error);
    spans.end(failure.code === 'cancelled' ? CLIENT_CLOSED_STATUS : failure.status, failure);
    throw error;
  }
}

/** `relayToWorker` within its spans. */
async function relayTraced<P extends RelayedPayload>(request: FastifyRequest, reply: FastifyReply, options: ModelRelayOptions<P>, spans: RelaySpans): Promise<unknown> {
  const { holder } = options;
  const arrivedAt = Date.now();
  // The request's own id, its job's: its request log row's key (a client's X-Request-Id may repeat).
  const jobId = randomUUID();
  // Redis waits (a cluster failing over) count against the request's time-out, admission's too.
  const deadline = arrivedAt + options.timeoutMs;
  // Admission's span: from here to admitted (relayAdmitted), or refused.
  const admission = spans.admission();
  const refused = (error: unknown): never => {
    endSpan(admission, GatewayError.from(error).code);
    logIfLeft(request, options, jobId, arrivedAt, error, holder.priority, spans.traceId);
    throw error;
  };
  // X-Priority may lower the key's priority, never raise it; any other value is a 400.
  let priority: 'interactive' | 'batch';
  try {
    priority = priorityOf(request.headers['x-priority'], holder.priority);
  } catch (error) {
    return refused(error);
  }
  // A place in its user's intake window (one a priority) until its job is on the queue, or the request ends.
  const leaveIntake = options.intake
    ? await options.intake.enter(`${holder.userId}:${priority}`, clientGoneSignal(request), deadline).catch(refused)
    : undefined;
  try {
    return await relayAdmitted(request, reply, options, { jobId, arrivedAt, deadline, priority, leaveIntake, spans, admission, refused });
  } finally {
    leaveIntake?.();
  }
}

/** `relayToWorker` once the request has its place in the intake window. */
async function relayAdmitted<P extends RelayedPayload>(
  request: FastifyRequest, reply: FastifyReply, options: ModelRelayOptions<P>,
  { jobId, arrivedAt, deadline, priority, leaveIntake, spans, admission, refused }: {
    jobId: string; arrivedAt: number; deadline: number; priority: 'interactive' | 'batch'; leaveIntake?: () => void; spans: RelaySpans; admission: Span;
    /** Ends admission's span as refused, logs a client that left meanwhile, and throws. */
    refused: (error: unknown) => never;
  },
): Promise<unknown> {
  const { holder } = options;
  const admitting = options.admission.admit(priority, holder, options.queue, options.worstCase, deadline, { model: options.model });
  // Admitted only after the deadline passed: nothing will run, so what it holds goes back.
  admitting.catch(() => {});
  const admitted = await beforeDeadline(admitting, deadline).catch((error: unknown) => {
    void admitting.then((late) => late.unrun(), () => {});
    return refused(error);
  });
  admission.end();
  // From here its row is the job's: its worker's, or logUnrun's if it never runs.
  request.loggedAsJob = true;
  // The job's failure as the client saw it, for the row of a job removed unrun.
  let failure: GatewayError | undefined;
  // The priority the request runs at, which X-Priority may have lowered but never raised.
  reply.header('x-priority', admitted.batch ? 'batch' : 'interactive');
  const payload: P = admitted.hold ? { ...options.payload, caller: { ...options.payload.caller, hold: admitted.hold } } : options.payload;
  const enqueuing = spans.enqueue();
  const enqueue = {
    requestId: request.id,
    jobId,
    queuedAt: arrivedAt,
    payloadChars: request.bodyChars,
    requestJson: options.requestJson,
    timeoutMs: Math.max(1, deadline - Date.now()),
    signal: clientGoneSignal(request),
    priority: admitted.priority,
    tenant: { userId: holder.userId, tokenId: holder.tokenId, listed: admitted.listed },
    hold: admitted.hold,
    traceparent: enqueuing.traceparent,
    onQueued: () => {
      enqueuing.queued();
      leaveIntake?.();
    },
    onUnrun: (removed?: RemovedJob) => {
      admitted.unrun(removed);
      // Told from the client's failure path, which may not have run yet when the add itself failed.
      setImmediate(() => logUnrun(request, options, jobId, arrivedAt, failure ?? overloaded('the request could not be queued'), admitted.batch ? 'batch' : 'interactive', spans.traceId));
    },
  };
  const format = options.stream;
  if (!format) {
    // The worker's JSON goes to the client as it is: no parse and serialisation in between.
    const json = await options.jobs.requestText(options.queue, payload, enqueue).catch((error: unknown) => {
      throw (failure = cutReason(request) === STOPPED ? stoppedError() : GatewayError.from(error));
    });
    await settled(request, options, json);
    reply.type('application/json; charset=utf-8');
    if (json.length <= options.responseBufferBytes) return reply.send(json);
    // Large: a slice at a time as the socket drains, so the gateway buffers one slice (and the
    // text it already holds), not a second copy of the whole reply per slow client.
    reply.header('content-length', Buffer.byteLength(json));
    return reply.send(Readable.from(textSlices(json, 64 * 1024), { objectMode: false }));
  }

  const raw = reply.raw;
  let started = false;
  /** Set while the client's socket is full: resolves when it has drained, or closed. */
  let draining: Promise<CaughtUp> | undefined;
  const drained = () => {
    draining ??= new Promise<CaughtUp>((resolve) => {
      const done = (how: CaughtUp) => () => {
        raw.off('drain', onDrain);
        raw.off('close', onClose);
        draining = undefined;
        resolve(how);
      };
      const onDrain = done('drained');
      const onClose = done('gone');
      raw.on('drain', onDrain);
      raw.on('close', onClose);
    });
    return draining;
  };
  const begin = (firstChunk?: string) => {
    if (started) return;
    started = true;
    reply.hijack();
    const contentType = typeof format.contentType === 'function' ? format.contentType(firstChunk) : format.contentType;
    const headers = contentType ? { ...streamHeaders, 'content-type': contentType } : streamHeaders;
    raw.writeHead(200, { ...(reply.getHeaders() as Record<string, string>), ...headers });
  };
  try {
    const result = await options.jobs.requestText(options.queue, payload, {
      ...enqueue,
      windowChars: options.streamWindowChars,
      onChunk: (chunk) => {
        begin(chunk);
        // A client that reads slower than the upstream writes pauses the job (backpressure)
        // instead of having the gateway buffer for it. What was already on its way still comes;
        // past the buffer cap the client is dropped (the job is cancelled as it goes).
        // A chunk nobody will take is not written through: the worker is not credited for it.
        if (raw.destroyed) return CLIENT_GONE;
        // Only what was buffered before this event counts against the cap: one event is held
        // whole (a long speech's audio, a large Gemini event), however large, for a client that reads.
        const behind = raw.socket?.writableLength ?? raw.writableLength;
        if (raw.write(format.chunk(chunk))) return;
        if (behind > options.responseBufferBytes) {
          request.log.warn({ buffered: behind }, 'a stream\'s client fell too far behind and was dropped');
          raw.destroy();
          return CLIENT_GONE;
        }
        return drained();
      },
    });
    begin();
    await settled(request, options);
    raw.end(format.end(result));
  } catch (error) {
    failure = cutReason(request) === STOPPED ? stoppedError() : GatewayError.from(error);
    if (!started) throw failure;
    spans.brokeOff(failure);
    const last = format.error(failure);
    // What the stream announced is kept as it ended (a stored response, failed), before the client reads its end.
    await settled(request, options);
    if (last === undefined) raw.destroy();
    else if (!raw.destroyed && !raw.writableEnded) raw.end(last);
    request.log.warn({ status: failure.status, code: failure.code }, 'stream ended by a failure after its first chunk');
  }
  return reply;
}
