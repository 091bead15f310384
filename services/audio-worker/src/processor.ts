import { estimateAudioTokens, estimateTokens, geminiRequestText, type AudioJobPayload, type GeminiGenerateResponse, type SpeechEnd, type StreamEnd } from '@gateway/contracts';
import { channelTypesFor } from '@gateway/providers';
import type { JobContext } from '@gateway/queue';
import { routeRecordIn, type ModelRequest, type ModelRouter } from '@gateway/routing';
import { generateContentWhole, openGenerateContentStream, promptUsage, relayModelJob, type GeminiOutputEstimate } from '@gateway/worker-runtime';
import { openSpeech, speechPromptTokens } from './speech.ts';
import { audioMsOf } from './usage-estimate.ts';

export interface AudioWorkerDeps {
  router: ModelRouter;
}

/** A speech's output, estimated where its upstream reports no usage: by its seconds of audio. */
const audioOutput: GeminiOutputEstimate = { weight: audioMsOf, tokens: estimateAudioTokens };

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
    const common = { caller: payload.caller, operation: payload.operation, signal: context.signal, deadline: context.deadline, priority: context.priority, log: context.log, record: routeRecordIn(context.facts), idle: context.idle };
    if (payload.operation === 'speech') {
      const speech = payload.request;
      return relayModelJob(deps.router, { ...common, types: channelTypesFor('speech'), model: speech.model }, context, (target) => openSpeech(target, speech), () => promptUsage(speechPromptTokens(speech)));
    }
    const request = payload.request;
    const call = { operation: 'generateContent' as const, request };
    const routed: ModelRequest = { ...common, types: channelTypesFor('generateContent'), model: payload.model };
    const promptTokens = estimateTokens(geminiRequestText(request));
    // A reply refused for its size is charged the prompt the upstream read (model-router.ts).
    const prompt = () => promptUsage(promptTokens);
    if (payload.method === 'streamGenerateContent') {
      return relayModelJob(deps.router, routed, context, (target) => openGenerateContentStream(target, call, promptTokens, audioOutput), prompt);
    }
    return relayModelJob(deps.router, routed, context, (target) => generateContentWhole(target, call, promptTokens, audioOutput), prompt);
  };
}
