import {
  estimateAudioTokens,
  estimateTokens,
  geminiRequestText,
  type AudioJobPayload,
  type GeminiGenerateRequest,
  type GeminiGenerateResponse,
  type SpeechEnd,
  type StreamEnd,
} from '@gateway/contracts';
import { callUpstream, channelTypesFor, operationFor, streamUpstream } from '@gateway/providers';
import type { JobContext } from '@gateway/queue';
import { routeRecordIn, type ModelRequest, type ModelRouter, type RouteTarget, type Usage } from '@gateway/routing';
import { relayModelJob, type ModelAnswer, type Piece, type WholeAnswer } from '@gateway/worker-runtime';
import { openSpeech, speechPromptTokens } from './speech.ts';
import { audioMsOf } from './usage-estimate.ts';

export interface AudioWorkerDeps {
  router: ModelRouter;
}

/**
 * Serves one speech job (its request validated by the ingress): Gemini's own `generateContent`,
 * or OpenAI's text-to-speech (`speech.ts`). The router chooses the channel, of any type whose
 * provider offers the operation (failover, cooldown, usage), and the relay (`relayModelJob`)
 * runs the attempts; this module only says how to call one channel, whole or streamed.
 *
 * A whole reply travels back as the job's result: one copy on the waiting ingress's reply
 * stream, deleted as soon as it is read, never in BullMQ's shared events stream (the job itself
 * returns nothing to BullMQ and is removed on completion).
 */
export function audioJobHandler(deps: AudioWorkerDeps) {
  return async (context: JobContext<AudioJobPayload>): Promise<GeminiGenerateResponse | StreamEnd | SpeechEnd> => {
    // Validated by the ingress: the envelope is the contract, not checked a second time.
    const payload = context.payload;
    const common = { caller: payload.caller, signal: context.signal, deadline: context.deadline, priority: context.priority, log: context.log, record: routeRecordIn(context.facts), idle: context.idle };
    if (payload.operation === 'speech') {
      const speech = payload.request;
      return relayModelJob(deps.router, { ...common, types: channelTypesFor('speech'), model: speech.model }, context, (target) => openSpeech(target, speech), () => promptUsage(speechPromptTokens(speech)));
    }
    const request = payload.request;
    const routed: ModelRequest = { ...common, types: channelTypesFor('generateContent'), model: payload.model };
    // A reply refused for its size is charged the prompt the upstream read (model-router.ts).
    const prompt = () => promptUsage(estimateTokens(geminiRequestText(request)));
    if (payload.method === 'streamGenerateContent') {
      return relayModelJob(deps.router, routed, context, (target) => openStream(target, request), prompt);
    }
    return relayModelJob(deps.router, routed, context, (target) => generateWhole(target, request), prompt);
  };
}

async function generateWhole(target: RouteTarget, request: GeminiGenerateRequest): Promise<WholeAnswer<GeminiGenerateResponse>> {
  const response = await callUpstream(operationFor('generateContent', target.channel.type), target, request);
  // The upstream reported no usage: estimate it, for the client and for the charge.
  response.usageMetadata ??= estimatedUsage(request, audioMsOf(response));
  return { whole: response, usage: geminiUsage(response.usageMetadata) };
}

/**
 * A stream opened on one channel: the upstream's events (each a whole GenerateContentResponse)
 * as the client's pieces, as they come. Gemini puts usageMetadata on the last event; until it
 * arrives the usage is an estimate of what was streamed, so a stream cut short is still charged.
 */
async function openStream(target: RouteTarget, request: GeminiGenerateRequest): Promise<ModelAnswer<StreamEnd>> {
  const events = await streamUpstream(operationFor('generateContent', target.channel.type), target, request);
  return { pieces: eventPieces(events, request), end: () => ({ done: true }) };
}

async function* eventPieces(events: AsyncIterable<GeminiGenerateResponse>, request: GeminiGenerateRequest): AsyncGenerator<Piece> {
  let audioMs = 0;
  let reported: Usage | undefined;
  for await (const event of events) {
    audioMs += audioMsOf(event);
    if (event.usageMetadata) reported = geminiUsage(event.usageMetadata);
    yield { data: JSON.stringify(event), usage: reported ?? geminiUsage(estimatedUsage(request, audioMs)) };
  }
}

function estimatedUsage(request: GeminiGenerateRequest, audioMs: number) {
  const promptTokenCount = estimateTokens(geminiRequestText(request));
  const candidatesTokenCount = estimateAudioTokens(audioMs);
  return {
    promptTokenCount,
    candidatesTokenCount,
    totalTokenCount: promptTokenCount + candidatesTokenCount,
  };
}

const promptUsage = (tokens: number): Usage => ({ totalTokens: tokens, promptTokens: tokens, completionTokens: 0 });

/** Gemini's usage as the router records it: the charge is the total. */
function geminiUsage(usage: { promptTokenCount?: number; candidatesTokenCount?: number; totalTokenCount: number }): Usage {
  return { totalTokens: usage.totalTokenCount, promptTokens: usage.promptTokenCount, completionTokens: usage.candidatesTokenCount };
}
