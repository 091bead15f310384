import {
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
import { relaySpeech } from './speech.ts';
import { audioMsOf, estimateAudioTokens, estimateTextTokens } from './usage-estimate.ts';

export interface AudioWorkerDeps {
  router: ModelRouter;
}

/**
 * Serves one speech job (its request validated by the ingress): Gemini's own `generateContent`,
 * or OpenAI's text-to-speech (`speech.ts`). The router chooses the channel, of any type whose
 * provider offers the operation (failover, cooldown, usage), while this module only says how to
 * call one, whole or streamed.
 *
 * A whole reply travels back as the job's result: one copy on the waiting ingress's reply
 * stream, deleted as soon as it is read, never in BullMQ's shared events stream (the job itself
 * returns nothing to BullMQ and is removed on completion).
 */
export function audioJobHandler(deps: AudioWorkerDeps) {
  return async (context: JobContext<AudioJobPayload>): Promise<GeminiGenerateResponse | StreamEnd | SpeechEnd> => {
    // Validated by the ingress: the envelope is the contract, not checked a second time.
    const payload = context.payload;
    const common = { caller: payload.caller, signal: context.signal, deadline: context.deadline, priority: context.priority, log: context.log, record: routeRecordIn(context.facts) };
    if (payload.operation === 'speech') {
      const speech = payload.request;
      return deps.router.run({ ...common, types: channelTypesFor('speech'), model: speech.model }, (target) => relaySpeech(target, speech, context));
    }
    const request = payload.request;
    const routed: ModelRequest = { ...common, types: channelTypesFor('generateContent'), model: payload.model };
    if (payload.method === 'streamGenerateContent') {
      return deps.router.run(routed, (target) => relayStream(target, request, context));
    }
    return deps.router.run(routed, (target) => generateWhole(target, request));
  };
}

async function generateWhole(target: RouteTarget, request: GeminiGenerateRequest): Promise<GeminiGenerateResponse> {
  const response = await callUpstream(operationFor('generateContent', target.channel.type), target, request);
  // The upstream reported no usage: estimate it, for the client and for the charge.
  response.usageMetadata ??= estimatedUsage(request, audioMsOf(response));
  target.reportUsage(geminiUsage(response.usageMetadata));
  return response;
}

/**
 * Relays the upstream's events one by one as they come (each a whole GenerateContentResponse).
 * The first event sent commits the attempt: the router fails over only before it. Gemini puts
 * usageMetadata on the last event; until it arrives the charge is an estimate of what was
 * streamed, so a stream cut short is still charged.
 */
async function relayStream(target: RouteTarget, request: GeminiGenerateRequest, context: JobContext<AudioJobPayload>): Promise<StreamEnd> {
  let audioMs = 0;
  let reported = false;
  const events = await streamUpstream(operationFor('generateContent', target.channel.type), target, request);
  for await (const event of events) {
    audioMs += audioMsOf(event);
    if (event.usageMetadata) {
      target.reportUsage(geminiUsage(event.usageMetadata));
      reported = true;
    } else if (!reported) {
      target.reportUsage(geminiUsage(estimatedUsage(request, audioMs)));
    }
    target.commit();
    await context.sendChunk(JSON.stringify(event));
  }
  return { done: true };
}

function estimatedUsage(request: GeminiGenerateRequest, audioMs: number) {
  const promptTokenCount = estimateTextTokens(geminiRequestText(request));
  const candidatesTokenCount = estimateAudioTokens(audioMs);
  return {
    promptTokenCount,
    candidatesTokenCount,
    totalTokenCount: promptTokenCount + candidatesTokenCount,
  };
}

/** Gemini's usage as the router records it: the charge is the total. */
function geminiUsage(usage: { promptTokenCount?: number; candidatesTokenCount?: number; totalTokenCount: number }): Usage {
  return { totalTokens: usage.totalTokenCount, promptTokens: usage.promptTokenCount, completionTokens: usage.candidatesTokenCount };
}
