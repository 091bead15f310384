/** The conversation model as Converse blocks and back: media as bytes, cache marks as cache points, reasoning with its signature, cache usage. */
import { describe, expect, it } from 'vitest';
import { GatewayError, type ConversationRequest } from '@gateway/contracts';
import { converseConversation } from './converse.ts';

const request = (fields: Partial<ConversationRequest>): ConversationRequest => ({ model: 'm', system: [], messages: [], stream: false, ...fields });

describe('a conversation as Converse', () => {
  it('sends images and documents as bytes, cache marks as cache points after what they close, earlier reasoning with its signature', () => {
    const body = converseConversation.toUpstream(request({
      system: [{ type: 'text', text: 'Long instructions', cache: { type: 'ephemeral' } }],
      messages: [
        { role: 'user', parts: [{ type: 'image', source: { kind: 'base64', mediaType: 'image/png', data: 'iVBO' } }, { type: 'document', source: { kind: 'text', mediaType: 'text/plain', data: 'notes' }, title: 'My notes.txt' }, { type: 'text', text: 'Summarise' }] },
        { role: 'assistant', parts: [{ type: 'thinking', thinking: 'I read them', signature: 'sig-1' }, { type: 'thinking', thinking: 'another provider\'s' }, { type: 'text', text: 'Done' }] },
      ],
      thinking: { budgetTokens: 2048 },
      temperature: 0.5,
    }), 'anthropic.claude', false) as Record<string, any>;
    expect(body.system).toEqual([{ text: 'Long instructions' }, { cachePoint: { type: 'default' } }]);
    expect(body.messages[0].content).toEqual([
      { image: { format: 'png', source: { bytes: 'iVBO' } } },
      { document: { format: 'txt', name: 'My notes txt', source: { bytes: Buffer.from('notes').toString('base64') } } },
      { text: 'Summarise' },
    ]);
    expect(body.messages[1].content).toEqual([{ reasoningContent: { reasoningText: { text: 'I read them', signature: 'sig-1' } } }, { text: 'Done' }]);
    expect(body.additionalModelRequestFields).toEqual({ thinking: { type: 'enabled', budget_tokens: 2048 } });
    expect(body.inferenceConfig).toEqual({ maxTokens: expect.any(Number) });
  });

  it('fits a thinking budget it chooses (an effort, adaptive) under maxTokens, and sends a named one only where it fits', () => {
    const budgetOf = (fields: Partial<ConversationRequest>) => (converseConversation.toUpstream(request(fields), 'm', false) as { additionalModelRequestFields?: { thinking: { budget_tokens: number } } }).additionalModelRequestFields?.thinking.budget_tokens;
    expect([budgetOf({ reasoningEffort: 'low' }), budgetOf({ reasoningEffort: 'medium' }), budgetOf({ reasoningEffort: 'high' })]).toEqual([1024, 3072, 3072]);
    expect([budgetOf({ thinking: {}, maxOutputTokens: 8000 }), budgetOf({ reasoningEffort: 'high', maxOutputTokens: 32000 }), budgetOf({ thinking: {}, maxOutputTokens: 1024 })]).toEqual([4096, 16384, undefined]);
    expect([budgetOf({ thinking: { budgetTokens: 2000 }, maxOutputTokens: 3000 }), budgetOf({ thinking: { budgetTokens: 3000 }, maxOutputTokens: 3000 }), budgetOf({ thinking: { budgetTokens: 500 }, maxOutputTokens: 1000 })]).toEqual([2000, undefined, undefined]);
    expect(budgetOf({ temperature: 0.5 })).toBeUndefined();
  });

  it('names documents apart across the conversation, as Converse refuses a name twice', () => {
    const pdf = (title?: string) => ({ type: 'document' as const, source: { kind: 'base64' as const, mediaType: 'application/pdf', data: 'JVBE' }, ...(title ? { title } : {}) });
    const body = converseConversation.toUpstream(request({
      messages: [
        { role: 'user', parts: [pdf('report.pdf'), pdf(), pdf()] },
        { role: 'assistant', parts: [{ type: 'text', text: 'Read.' }] },
        { role: 'user', parts: [pdf('report.pdf'), pdf('REPORT pdf'), pdf('???')] },
      ],
    }), 'm', false) as { messages: { content: { document: { name: string } }[] }[] };
    const names = [body.messages[0]!, body.messages[2]!].flatMap((message) => message.content.map((block) => block.document.name));
    expect(names).toEqual(['report pdf', 'document', 'document (2)', 'report pdf (2)', 'REPORT pdf (3)', 'document (3)']);
  });

  it('refuses media by URL with a 400 naming the block', () => {
    const asked = request({ messages: [{ role: 'user', parts: [{ type: 'image', source: { kind: 'url', url: 'https://example.com/a.png' } }] }] });
    expect(() => converseConversation.toUpstream(asked, 'm', false)).toThrow(GatewayError);
  });

  it('reads a reply with reasoning, a tool use and cache reads and writes in its usage', () => {
    const reply = converseConversation.fromReply({
      output: { message: { role: 'assistant', content: [{ reasoningContent: { reasoningText: { text: 'hmm', signature: 's' } } }, { toolUse: { toolUseId: 't1', name: 'f', input: { a: 1 } } }] } },
      stopReason: 'tool_use',
      usage: { inputTokens: 10, outputTokens: 5, totalTokens: 115, cacheReadInputTokens: 80, cacheWriteInputTokens: 20 },
    });
    expect(reply).toMatchObject({
      parts: [{ type: 'thinking', thinking: 'hmm', signature: 's' }, { type: 'tool_use', id: 't1', name: 'f', input: { a: 1 } }],
      stopReason: 'tool_use',
      usage: { inputTokens: 10, outputTokens: 5, cacheReadTokens: 80, cacheWriteTokens: 20 },
    });
  });
});
