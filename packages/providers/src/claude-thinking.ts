/**
 * Claude's extended thinking as the gateway asks for it, wherever Claude is served: Anthropic's
 * Messages API, Vertex AI's Claude (the same body) and Bedrock's Converse (the same object in
 * `additionalModelRequestFields`). Claude takes a budget of at least 1024 tokens and below
 * `max_tokens`, which counts the thinking too, and refuses anything else with a 400.
 */
import type { ConversationRequest } from '@gateway/contracts';

/** The least budget Claude takes. */
export const LEAST_THINKING_BUDGET = 1024;

/** What the gateway asks for an effort (low 1024, medium 4096, high 16384), before fitting it under the limit. */
export const EFFORT_BUDGET = { minimal: 1024, low: 1024, medium: 4096, high: 16384 } as const;

export interface ClaudeThinking { type: 'enabled'; budget_tokens: number }

/**
 * The budget for a request that asks for thinking (a named budget, an effort, or thinking
 * without a budget, as `adaptive` asks), or undefined for one that does not, or cannot have it.
 * A budget the caller named is sent as named (raised to the least Claude takes), or not at all
 * when it cannot fit. One the gateway chooses, for an effort or for thinking without a budget
 * (as medium), is cut to leave the answer at least 1024 tokens: else a medium or high effort
 * under the default `max_tokens` (4096) would ask for no thinking at all.
 */
export function claudeThinkingBudget(request: Pick<ConversationRequest, 'thinking' | 'reasoningEffort'>, maxTokens: number): number | undefined {
  if (!request.thinking && !request.reasoningEffort) return undefined;
  const named = request.thinking?.budgetTokens;
  const chosen = Math.min(EFFORT_BUDGET[request.reasoningEffort ?? 'medium'], maxTokens - LEAST_THINKING_BUDGET);
  const budget = Math.max(LEAST_THINKING_BUDGET, named ?? chosen);
  return budget < maxTokens ? budget : undefined;
}

/** Claude's `thinking` field for the request, or undefined where it asks for none or none fits. */
export function claudeThinking(request: Pick<ConversationRequest, 'thinking' | 'reasoningEffort'>, maxTokens: number): ClaudeThinking | undefined {
  const budget = claudeThinkingBudget(request, maxTokens);
  return budget === undefined ? undefined : { type: 'enabled', budget_tokens: budget };
}
