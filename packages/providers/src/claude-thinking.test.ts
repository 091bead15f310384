/** Claude's thinking budget: one rule, and every Claude upstream (Anthropic, Vertex's Claude, Bedrock) sending what it gives. */
import { describe, expect, it } from 'vitest';
import { CHAT_DEFAULT_MAX_TOKENS, type ConversationRequest, type ResponsesRequest } from '@gateway/contracts';
import { claudeThinking, claudeThinkingBudget } from './claude-thinking.ts';
import { anthropic } from './anthropic/index.ts';
import { bedrock } from './bedrock/index.ts';
import { vertex } from './vertex/index.ts';

type Asked = Pick<ConversationRequest, 'thinking' | 'reasoningEffort'>;
const budget = (asked: Asked, maxTokens = CHAT_DEFAULT_MAX_TOKENS) => claudeThinkingBudget(asked, maxTokens);

describe("Claude's thinking budget", () => {
  it('asks for none where the request asks for no thinking', () => {
    expect(budget({})).toBeUndefined();
    expect(claudeThinking({}, 8000)).toBeUndefined();
  });

  it('cuts a budget it chooses to leave the answer 1024 tokens: every effort thinks under the default max_tokens', () => {
    expect((['minimal', 'low', 'medium', 'high'] as const).map((reasoningEffort) => budget({ reasoningEffort }))).toEqual([1024, 1024, 3072, 3072]);
    expect(budget({ reasoningEffort: 'medium' }, 8000)).toBe(4096);
    expect(budget({ reasoningEffort: 'high' }, 8000)).toBe(6976);
    expect(budget({ reasoningEffort: 'high' }, 32000)).toBe(16384);
  });

  it('chooses for thinking without a budget (adaptive) as for a medium effort', () => {
    expect([budget({ thinking: {} }), budget({ thinking: {} }, 8000), budget({ thinking: {} }, 32000)]).toEqual([3072, 4096, 4096]);
  });

  it('never goes below 1024, and asks for none where 1024 does not fit below max_tokens', () => {
    expect(budget({ reasoningEffort: 'high' }, 1500)).toBe(1024);
    expect([budget({ reasoningEffort: 'low' }, 1024), budget({ thinking: {} }, 1000)]).toEqual([undefined, undefined]);
  });

  it('sends a named budget as named (at least 1024), or none where it cannot fit', () => {
    expect(budget({ thinking: { budgetTokens: 2000 } }, 3000)).toBe(2000);
    expect(budget({ thinking: { budgetTokens: 500 } }, 3000)).toBe(1024);
    expect(budget({ thinking: { budgetTokens: 3000 } }, 3000)).toBeUndefined();
    expect(budget({ thinking: { budgetTokens: 500 } }, 1000)).toBeUndefined();
    // A named budget wins over an effort.
    expect(budget({ thinking: { budgetTokens: 2000 }, reasoningEffort: 'high' }, 30000)).toBe(2000);
  });

  it('is what Anthropic, Vertex\'s Claude and Bedrock send for the same request', () => {
    const asked = (fields: Partial<ResponsesRequest>) => ({ model: 'alias', input: 'Think.', ...fields }) as ResponsesRequest;
    const sent = (request: ResponsesRequest) => {
      const onAnthropic = anthropic.responses.mapping.toUpstream(request, 'claude-up', false) as { thinking?: unknown; max_tokens: number };
      const onVertex = vertex.responses.forModel!('claude-sonnet-4@20250514').mapping.toUpstream(request, 'claude-sonnet-4@20250514', false) as { thinking?: unknown };
      const onBedrock = bedrock.responses.mapping.toUpstream(request, 'anthropic.claude', false) as { additionalModelRequestFields?: { thinking?: unknown } };
      return [onAnthropic.thinking, onVertex.thinking, onBedrock.additionalModelRequestFields?.thinking];
    };
    const thrice = (budget_tokens: number) => Array(3).fill({ type: 'enabled', budget_tokens });
    expect(sent(asked({ reasoning: { effort: 'medium' } }))).toEqual(thrice(3072));
    expect(sent(asked({ reasoning: { effort: 'high' } }))).toEqual(thrice(3072));
    expect(sent(asked({ reasoning: { effort: 'high' }, max_output_tokens: 20000 }))).toEqual(thrice(16384));
    expect(sent(asked({ reasoning: { effort: 'none' } }))).toEqual([undefined, undefined, undefined]);
  });
});
