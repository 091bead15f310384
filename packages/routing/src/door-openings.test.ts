import { describe, expect, it } from 'vitest';
import { conversationKey } from './conversation-key.ts';
import { geminiOpening, messagesOpening, openingOfOperation, responsesOpening } from './door-openings.ts';
import type { ConversationSource } from './conversation-key.ts';

const keyOf = (opening: Pick<ConversationSource, 'opening' | 'openingOnly'>) => conversationKey({ tokenId: 7, model: 'm', ...opening });

describe('messagesOpening', () => {
  const ask = (text: string, marked = false) => ({ role: 'user', content: [{ type: 'text', text, ...(marked ? { cache_control: { type: 'ephemeral' } } : {}) }] });
  const system = [{ type: 'text', text: 'You plan trips.', cache_control: { type: 'ephemeral' } }];

  it('names every turn alike, though the client moves its cache mark to the newest message', () => {
    const first = { system, messages: [ask('Lisbon?', true)] };
    const third = { system, messages: [ask('Lisbon?'), { role: 'assistant', content: 'Yes.' }, ask('And Porto?'), { role: 'assistant', content: 'Also.' }, ask('Then?', true)] };
    expect(messagesOpening(first).openingOnly).toBe(true);
    expect(messagesOpening(third).openingOnly).toBe(false);
    expect(keyOf(messagesOpening(third))).toBe(keyOf(messagesOpening(first)));
    expect(keyOf(messagesOpening({ system: 'Other.', messages: [ask('Lisbon?')] }))).not.toBe(keyOf(messagesOpening(first)));
    expect(keyOf(messagesOpening({ system, messages: [ask('Madrid?')] }))).not.toBe(keyOf(messagesOpening(first)));
  });

  it('has none without a user message', () => {
    expect(messagesOpening({ messages: [{ role: 'assistant', content: 'Hi' }] })).toEqual({});
  });
});

describe('responsesOpening', () => {
  it('takes a string input as the user message a later turn repeats as an item', () => {
    const first = responsesOpening({ instructions: 'Be brief.', input: 'Lisbon?' });
    const later = responsesOpening({ instructions: 'Be brief.', input: [{ role: 'user', content: 'Lisbon?' }, { role: 'assistant', content: 'Yes.' }, { role: 'user', content: 'Then?' }] });
    expect(first.openingOnly).toBe(true);
    expect(later.openingOnly).toBe(false);
    expect(keyOf(later)).toBe(keyOf(first));
    expect(keyOf(responsesOpening({ instructions: 'Be long.', input: 'Lisbon?' }))).not.toBe(keyOf(first));
    expect(responsesOpening({ input: [{ type: 'function_call_output', call_id: 'c', output: '1' }] })).toEqual({});
  });
});

describe('geminiOpening', () => {
  it('reads a content without a role as the user\'s, and keeps the system instruction in the opening', () => {
    const systemInstruction = { parts: [{ text: 'You plan trips.' }] };
    const first = geminiOpening({ systemInstruction, contents: [{ parts: [{ text: 'Lisbon?' }] } as never] });
    const later = geminiOpening({ systemInstruction, contents: [{ parts: [{ text: 'Lisbon?' }] } as never, { role: 'model', parts: [{ text: 'Yes.' }] } as never, { role: 'user', parts: [{ text: 'Then?' }] } as never] });
    expect(first.openingOnly).toBe(true);
    expect(later.openingOnly).toBe(false);
    expect(keyOf(later)).toBe(keyOf(first));
    expect(keyOf(geminiOpening({ systemInstruction, contents: [{ role: 'user', parts: [{ text: 'Lisbon?' }] } as never] }))).toBe(keyOf(first));
    expect(keyOf(geminiOpening({ contents: [{ parts: [{ text: 'Lisbon?' }] } as never] }))).not.toBe(keyOf(first));
  });
});

describe('openingOfOperation', () => {
  const session = { 'x-session-id': 's1' };
  const turnOf = (operation: keyof typeof openingOfOperation, request: unknown, headers?: Record<string, string>) => {
    const opening = openingOfOperation[operation];
    return opening && conversationKey({ tokenId: 7, model: 'm', headers, ...opening(request) });
  };

  it('names a chat by its opening, a completion by its session header alone, an embedding never', () => {
    const chat = { messages: [{ role: 'system', content: 'be brief' }, { role: 'user', content: 'hi' }] };
    expect(turnOf('chat', chat)).toBe(turnOf('chat', { messages: [...chat.messages, { role: 'assistant', content: 'hello' }, { role: 'user', content: 'more' }] }));
    expect(turnOf('completions', { prompt: 'hi' })).toBeUndefined();
    expect(turnOf('completions', { prompt: 'hi' }, session)).toBe(turnOf('completions', { prompt: 'other' }, session));
    for (const operation of ['embeddings', 'countTokens', 'speech', 'embedContent'] as const) expect(openingOfOperation[operation]).toBeUndefined();
  });
});
