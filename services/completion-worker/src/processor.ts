import {
  clientCancelled,
  type CompletionJobPayload,
  type CompletionRequest,
  type CompletionResponse,
  type StreamEnd,
} from '@gateway/contracts';
import { callUpstream, openai, streamUpstream } from '@gateway/providers';
import type { JobContext } from '@gateway/queue';
import type { ModelRequest, ModelRouter, RouteTarget } from '@gateway/routing';
import { estimatePromptTokens, estimateTokens } from './usage-estimate.ts';
import { usageGrace } from './usage-grace.ts';

export interface CompletionWorkerDeps {
  router: ModelRouter;
}

/**
 * Serves one completion job (its request validated by the ingress), and lets the router choose
 * channels while this module only says how to call one, whole or streamed.
 */
export function completionJobHandler(deps: CompletionWorkerDeps) {
  return async (context: JobContext<CompletionJobPayload>): Promise<CompletionResponse | StreamEnd> => {
    // Validated by the ingress: the envelope is the contract, not checked a second time.
    const request = context.payload.request;
    const routed: ModelRequest = {
      caller: context.payload.caller,
      type: 'openai',
      model: request.model,
      signal: context.signal,
      deadline: context.deadline,
      priority: context.priority,
      log: context.log,
    };
    if (request.stream === true) {
      // A stream whose client leaves is charged by the upstream's usage if it comes soon after.
      const grace = usageGrace(context.signal);
      try {
        return await deps.router.run({ ...routed, signal: grace.signal }, (target) => relayStream(target, request, context, grace.begun));
      } finally {
        grace.end();
      }
    }
    return deps.router.run(routed, (target) => completeWhole(target, request));
  };
}

async function completeWhole(target: RouteTarget, request: CompletionRequest): Promise<CompletionResponse> {
  const response = await callUpstream(openai.completions, target, request);
  if (response.usage.total_tokens === 0 && response.usage.prompt_tokens === 0) {
    // The upstream reported no usage: estimate it, for the client and for the charge.
    const prompt = estimatePromptTokens(request.prompt);
    // An echoed prompt is in each choice's text, but counted once, as prompt.
    const echoed = request.echo === true && typeof request.prompt === 'string' ? request.prompt : '';
    const text = (c: { text?: string }) => (echoed && c.text?.startsWith(echoed) ? c.text.slice(echoed.length) : c.text ?? '');
    const completion = estimateTokens(response.choices.map(text).join(''));
    response.usage = { ...response.usage, prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
  }
  target.reportUsage({ totalTokens: response.usage.total_tokens });
  return response;
}

/**
 * Relays the upstream's chunks one by one as they come. The first chunk sent commits the
 * attempt: the router fails over only before it. The usage chunk reaches the client only when
 * it asked for it (the upstream is always asked, so the request can be charged).
 */
async function relayStream(target: RouteTarget, request: CompletionRequest, context: JobContext<CompletionJobPayload>, begun: () => void): Promise<StreamEnd> {
  const includeUsage = request.stream_options?.include_usage === true;
  const promptTokens = estimatePromptTokens(request.prompt);
  let streamedChars = 0;
  let reported = false;
  const chunks = await streamUpstream(openai.completions, target, request);
  begun();
  for await (const chunk of chunks) {
    if (chunk.usage) {
      target.reportUsage({ totalTokens: chunk.usage.total_tokens });
      reported = true;
      // The client is gone: this was all it was still read for. The upstream used it: charged.
      if (context.signal.aborted) {
        target.commit();
        throw clientCancelled();
      }
      if (!includeUsage) {
        if (chunk.choices.length === 0) continue;
        delete chunk.usage;
      }
    } else if (includeUsage) {
      chunk.usage = null;
    }
    // The client is gone: read on (within the grace) for the usage only; the estimate counts
    // only what was sent.
    if (context.signal.aborted) continue;
    for (const choice of chunk.choices) streamedChars += choice.text?.length ?? 0;
    if (!reported) target.reportUsage({ totalTokens: promptTokens + Math.ceil(streamedChars / 4) });
    target.commit();
    await context.sendChunk(JSON.stringify(chunk));
  }
  if (context.signal.aborted) throw clientCancelled();
  return { done: true };
}
