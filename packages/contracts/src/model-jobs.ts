/**
 * What the ingress hands a model worker besides the request itself: who is calling, resolved
 * from the API key, so the worker can route by group and charge usage without re-authenticating.
 */
import type { GeminiGenerateRequest } from './wire/gemini-generate.ts';
import type { CompletionRequest } from './wire/openai-completion.ts';

export interface ModelCaller {
  tokenId: number;
  userId: number;
  /** The user's group; a channel serves the caller only if its `group` list includes it. */
  group: string;
  /**
   * The request's hold on its key's and user's quota and in-flight slots, made by the gateway
   * (`QuotaHolds`); the worker gives it back once the request's charge is written.
   */
  hold?: string;
}

/** Payload of a job on the completion queue. */
export interface CompletionJobPayload {
  caller: ModelCaller;
  request: CompletionRequest;
}

/** The two Gemini methods the audio queue serves: one whole reply, or a stream of replies. */
export type AudioMethod = 'generateContent' | 'streamGenerateContent';

/** Payload of a job on the audio queue. */
export interface AudioJobPayload {
  caller: ModelCaller;
  /** The model named in the path (`/v1beta/models/{model}:…`), which is the one that counts. */
  model: string;
  method: AudioMethod;
  request: GeminiGenerateRequest;
}

/** What a completion or audio job returns when the answer was streamed as chunks. */
export interface StreamEnd {
  done: true;
}
