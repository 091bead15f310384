import { describe, expect, it } from 'vitest';
import type { ChatMessage } from '@gateway/contracts';
import { toAnthropicConversation } from './chat-messages.ts';

const parts = (count: number) => Array.from({ length: count }, (_, i) => ({ type: 'text' as const, text: `p${i}` }));

describe('toAnthropicConversation, however many parts', () => {
  it('joins 150,000 parts onto a turn, and makes a system of as many, without running out of stack', () => {
    const joined = toAnthropicConversation([{ role: 'user', content: 'first' }, { role: 'user', content: parts(150_000) }] as ChatMessage[]);
    expect(joined.messages).toHaveLength(1);
    expect(joined.messages[0]!.content).toHaveLength(150_001);
    const system = toAnthropicConversation([{ role: 'system', content: parts(150_000) }, { role: 'user', content: 'hi' }] as ChatMessage[]);
    expect(system.system).toHaveLength(150_000);
    const assistant = toAnthropicConversation([{ role: 'assistant', content: 'a' }, { role: 'assistant', content: parts(150_000) }] as ChatMessage[]);
    expect(assistant.messages[0]!.content).toHaveLength(150_001);
  });
});
