import { describe, expect, it } from 'vitest';
import type { MessagesRequest } from '@gateway/contracts';
import { messages } from './messages.ts';

const request = { model: 'client-model', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] } as MessagesRequest;

describe('the Messages door passed through to an anthropic upstream', () => {
  it('gives back each event with its type first wherever the upstream put it, so the door names the SSE event right', () => {
    const delta = messages.fromEvent({ index: 0, delta: { text: 'hi', type: 'text_delta' }, type: 'content_block_delta' }, request, {});
    expect(JSON.stringify(delta)).toBe('{"type":"content_block_delta","index":0,"delta":{"text":"hi","type":"text_delta"}}');
    const start = messages.fromEvent({ message: { id: 'msg_1', model: 'upstream-model' }, type: 'message_start' }, request, {});
    expect(JSON.stringify(start)).toBe('{"type":"message_start","message":{"id":"msg_1","model":"client-model"}}');
  });
});
