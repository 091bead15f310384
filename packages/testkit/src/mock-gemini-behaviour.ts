/** What the mock Gemini upstream does with the next requests, and the failures a test injects. */
import type { MockSpeechBehaviour } from './mock-gemini-speech.ts';
import type { MockGeminiTextBehaviour } from './mock-gemini-text.ts';
import { geminiFailureBody } from './mock-gemini-errors.ts';
import type { MockBehaviour } from './mock-wire-format.ts';

/** What the mock does with the next requests; every field can change between tests with `set`. */
export interface MockGeminiBehaviour extends MockGeminiTextBehaviour, MockSpeechBehaviour {
  /** Wait this long before answering (for streams: before the first event). Default 0. */
  delayMs: number;
  /** Requests beyond this many at once get 429 RESOURCE_EXHAUSTED. Default unlimited. */
  maxConcurrent: number;
  /** Never answer (until the caller gives up or the mock closes). Default false. */
  hang: boolean;
  /** Pause between streamed events. Default 0. */
  streamIntervalMs: number;
  /** A stream (of audio or of text) breaks its connection after sending this many events. Default null (never). */
  breakAfterEvents: number | null;
}

export const DEFAULT_GEMINI_BEHAVIOUR: MockGeminiBehaviour = {
  delayMs: 0,
  maxConcurrent: Number.POSITIVE_INFINITY,
  hang: false,
  msPerCharacter: 50,
  pcmBytes: null,
  streamChunkMs: 1000,
  streamIntervalMs: 0,
  breakAfterEvents: null,
  safetyRatings: false,
  text: null,
  cachedTokens: 0,
};

/** An injected failure: an HTTP status with Gemini's error body, a reset connection, or no answer. */
export type MockGeminiFailure = number | 'reset' | 'hang';

/** A behaviour, or a scripted failure the shared base answers in its place. */
export type GeminiBehaviour = MockGeminiBehaviour & MockBehaviour;

/** `failure` as a behaviour the base plays: at once, whatever the behaviour's delay or hang. */
export function scriptedFailure(behaviour: MockGeminiBehaviour, failure: MockGeminiFailure, message?: string): GeminiBehaviour {
  const scripted: GeminiBehaviour = { ...behaviour, delayMs: 0, hang: failure === 'hang', reset: failure === 'reset' };
  if (typeof failure === 'number') Object.assign(scripted, { status: failure, body: geminiFailureBody(failure, message) });
  return scripted;
}
