/**
 * The shape every provider folder fills in, as Portkey's providers do: `api.ts` says where the
 * upstream is, how a channel's credential is put on a request and the endpoint of each operation; each
 * operation's file (`openai/complete.ts`, `gemini/generate.ts`) says how a request maps to it
 * and how its reply, and each stream event, map back; `index.ts` joins them into the operations
 * the provider offers. `call-upstream.ts` does the HTTP for all of them.
 */
import type { UpstreamError } from '@gateway/contracts';

/** One call as the router chose it: a channel, its key, its model and the time the call may take. */
export interface UpstreamTarget {
  channel: { base_url: string };
  /** The channel's key in clear, for the upstream call alone: never logged. */
  key: string;
  /** The model name the upstream knows (after the channel's model_mapping). */
  upstreamModel: string;
  /** Milliseconds for the whole reply; for a stream, for its headers and then for each next piece. */
  timeoutMs: number;
  /** Aborted when nobody waits for the answer any more. */
  signal?: AbortSignal;
  /** The client's headers its door hands on (`ClientHeaders`); sent only as the provider's `clientHeaders` names them. */
  clientHeaders?: Record<string, string>;
}

/** An operation's path under the base URL, for the channel's model, whole or streamed. */
export type Endpoint = (upstreamModel: string, stream: boolean) => string;

/**
 * A request as it is about to leave: the shared code fills it in (the operation's URL, JSON and
 * the reply's type asked for, the client headers the provider takes, the body's bytes) and the
 * provider's `prepare` puts its credential on it, changing any part it must.
 */
export interface OutgoingRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
  body: Buffer | string;
}

/**
 * How an upstream frames a stream: `sse`, server-sent events; `aws-eventstream`, AWS's binary
 * event stream (Bedrock). Another framing is a name here and its decoder in `stream-decoders.ts`.
 */
export type StreamEncoding = 'sse' | 'aws-eventstream';

/** What a provider's `api.ts` fills in. */
export interface ProviderApi {
  /** The root every endpoint hangs from, from a channel's base_url as an administrator wrote it. */
  baseUrl(channelBaseUrl: string): string;
  /**
   * The request with the channel's credential on it, as the upstream wants it: a key in a header
   * (`keyInHeaders`), or a signature over the method, URL, headers and body, or a token fetched
   * first; so it may be async. `credential` is the channel's key in clear, a plain key or a
   * structured credential (`channel-credential.ts`), read here and never logged. A credential the
   * provider cannot read is the channel's failure (`badCredential`, a 401).
   */
  prepare(request: OutgoingRequest, credential: string, stream: boolean): OutgoingRequest | Promise<OutgoingRequest>;
  /**
   * What is wrong with a channel's key for this provider (`lacks "region"`), or undefined when
   * `prepare` can read it: the management API refuses such a key when a channel is created or
   * updated, rather than the channel failing at its first call. Fields, never values. Unset: any
   * key is taken as it is.
   */
  checkCredential?(credential: string): string | undefined;
  /** How its streams are framed. */
  streamEncoding: StreamEncoding;
  endpoints: Record<string, Endpoint>;
  /**
   * The client headers this provider takes as the client sent them (Anthropic's version and
   * betas), over its own of the same name; every other client header stays behind.
   */
  clientHeaders?: readonly string[];
  /**
   * This provider's own reading of a failure, where its status alone says the wrong thing
   * (optional). `credential` is the channel's, as `prepare` had it: a provider that caches
   * something made from it (an access token) drops it here when the upstream refuses it.
   */
  failure?(error: UpstreamError, credential: string): UpstreamError;
}

/**
 * How a stream says it is complete. A stream that stops before is reported as broken (a
 * `connection` failure), so a reply cut short is never taken for a whole one.
 */
export interface StreamEnd<Event> {
  /** What completes a stream, as the failure names it: "[DONE]", "its finishReason". */
  name: string;
  /** Data that completes the stream and is no event (OpenAI's `[DONE]`). */
  isMarker?(data: string): boolean;
  /** An event after which the stream is complete (Gemini's last, which carries a finishReason). */
  isLast?(event: Event): boolean;
}

/**
 * What an operation's file fills in: the request as the upstream wants it, and the upstream's
 * reply and stream events as the client sees them. A reply that does not follow the wire format
 * throws an `UpstreamError` (`protocol`, or `http` for an error the upstream put in a 200).
 */
export interface OperationMapping<Request, Reply, Event> {
  toUpstream(request: Request, upstreamModel: string, stream: boolean): unknown;
  fromReply(raw: unknown, request: Request): Reply;
  /**
   * One upstream stream event as the client's events: usually one, none for an event the client
   * has no counterpart of (a ping), or several. `state` is one object a stream, for a provider
   * whose events only make sense together (Anthropic's content blocks, its usage in two parts).
   */
  fromEvent(raw: unknown, request: Request, state: Record<string, unknown>): Event | Event[] | undefined;
  /** The client's last events once the upstream's stream is complete (a door whose format ends otherwise than the provider's). */
  finish?(request: Request, state: Record<string, unknown>): Event[];
  streamEnd: StreamEnd<Event>;
}

/** One operation as a provider's `index.ts` offers it: what `callUpstream` and `streamUpstream` take. */
export interface ProviderOperation<Request, Reply, Event> {
  api: ProviderApi;
  endpoint: Endpoint;
  mapping: OperationMapping<Request, Reply, Event>;
  /** `audio`: the reply is audio bytes, relayed as they come (`streamUpstreamAudio`), not JSON. */
  replies?: 'json' | 'audio';
  /**
   * The operation that serves this upstream model, for a provider whose wire format depends on
   * the model (Vertex AI: Google's models in Gemini's format, Anthropic's in Messages'); called
   * before anything else, and the operation it gives is the one called. Unset: this one.
   */
  forModel?(upstreamModel: string): ProviderOperation<Request, Reply, Event>;
  /**
   * Whether this operation serves the upstream model, for one a provider offers for some of its
   * models only (Vertex AI counts tokens for Anthropic's). Unset: every model.
   */
  servesModel?(upstreamModel: string): boolean;
}
