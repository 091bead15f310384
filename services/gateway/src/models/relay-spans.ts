/**
 * A model request's spans on its gateway: the server span of the request (continuing the
 * client's W3C `traceparent`), and its children: admission (the wait for a place in the intake
 * window and admission's own), the enqueue, whose context its job carries to the worker
 * (`JobEnvelope.traceparent`), and the wait for the reply. Only the route, the model and the
 * operation are put in them, after the GenAI conventions; never the body, a key or a user's name.
 * With tracing off, every one is the API's no-op span.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { GEN_AI, SpanKind, contextOf, endSpan, genAiOperationOf, trace, traceIdOf, traceparentOf, tracer, type Context, type Span } from '@gateway/tracing';
import type { GatewayError } from '@gateway/contracts';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set once the relay began its spans: the trace id, when sampled, of a request refused after that. */
    relayTrace: { traceId: string | undefined } | null;
  }
}

/**
 * The one span of a model request refused before the relay began (a bad key, a model not
 * allowed, an invalid body, a spent quota or budget seen from the headers): the server span,
 * failed with the refusal's code, from its arrival to its answer. Its trace id, when sampled.
 */
export function refusedSpan(request: FastifyRequest, reply: FastifyReply, route: string, model: string, code: string): string | undefined {
  const span = tracer.startSpan(`${request.method} ${route}`, {
    kind: SpanKind.SERVER,
    startTime: Date.now() - reply.elapsedTime,
    attributes: { 'http.request.method': request.method, 'http.route': route, 'http.response.status_code': reply.statusCode, ...(model ? { [GEN_AI.requestModel]: model } : {}) },
  }, contextOf(request.headers.traceparent));
  endSpan(span, code);
  return traceIdOf(span);
}

export class RelaySpans {
  private readonly server: Span;
  private readonly context: Context;
  /** The trace's id when it is sampled, for the rows the gateway writes itself. */
  readonly traceId: string | undefined;
  private enqueuing?: Span;
  private waiting?: Span;
  /** A stream's failure after its first chunk: the client had a 200, then an error event. */
  private broken?: GatewayError;

  constructor(request: FastifyRequest, reply: FastifyReply, payload: { operation?: string }, model: string) {
    const route = request.routeOptions.url ?? request.url;
    const operation = genAiOperationOf(payload.operation);
    const parent = contextOf(request.headers.traceparent);
    this.server = tracer.startSpan(`${request.method} ${route}`, {
      kind: SpanKind.SERVER,
      // From the request's arrival (Fastify's clock of it), its body's reading and validation included.
      startTime: Date.now() - reply.elapsedTime,
      attributes: { 'http.request.method': request.method, 'http.route': route, [GEN_AI.operation]: operation, [GEN_AI.requestModel]: model },
    }, parent);
    this.context = trace.setSpan(parent, this.server);
    this.traceId = traceIdOf(this.server);
    request.relayTrace = { traceId: this.traceId };
  }

  /** The span of admission: ended by the caller, failed by a refusal. */
  admission(): Span {
    return tracer.startSpan('admission', undefined, this.context);
  }

  /**
   * The span of the enqueue, with the traceparent its job carries; `queued` ends it and starts
   * the wait for the reply, which `end` ends.
   */
  enqueue(): { traceparent: string | undefined; queued: () => void } {
    const span = tracer.startSpan('enqueue', { kind: SpanKind.PRODUCER, attributes: { 'messaging.system': 'bullmq' } }, this.context);
    this.enqueuing = span;
    return {
      traceparent: traceparentOf(span),
      queued: () => {
        this.enqueuing = undefined;
        span.end();
        this.waiting = tracer.startSpan('wait for reply', undefined, this.context);
      },
    };
  }

  /** A stream ended by `failure` after its first chunk. */
  brokeOff(failure: GatewayError): void {
    this.broken = failure;
  }

  /** Ends the request's spans: answered with `status`, failed with `failure` (or broken off). */
  end(status: number, failure: GatewayError | undefined = this.broken): void {
    if (this.enqueuing) endSpan(this.enqueuing, failure?.code ?? 'not_queued');
    if (this.waiting) endSpan(this.waiting, failure?.code);
    this.server.setAttribute('http.response.status_code', status);
    endSpan(this.server, failure?.code);
  }
}
