import { describe, expect, it } from 'vitest';
import { chatOpening, conversationKey, conversationOf, sessionIdOf } from './conversation-key.ts';

const system = { role: 'system', content: 'You are a careful assistant.' };
const first = { role: 'user', content: 'Plan a trip to Lisbon.' };

/** The chat of turn `n`: the same opening, then n-1 exchanges more. */
function turn(n: number) {
  const messages: { role: string; content: string }[] = [system, first];
  for (let i = 1; i < n; i++) messages.push({ role: 'assistant', content: `answer ${i}` }, { role: 'user', content: `question ${i + 1}` });
  return messages;
}

const keyOf = (messages: { role: string; content?: string }[], fields: { tokenId?: number; model?: string; headers?: Record<string, string> } = {}) =>
  conversationKey({ tokenId: fields.tokenId ?? 7, model: fields.model ?? 'gpt-x', headers: fields.headers, ...chatOpening(messages) });

describe('conversationKey', () => {
  it('gives every turn of one chat the same key, and a chat with another opening another', () => {
    const keys = new Set([1, 2, 5, 10].map((n) => keyOf(turn(n))));
    expect(keys.size).toBe(1);
    expect([...keys][0]).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(keyOf([system, { role: 'user', content: 'Plan a trip to Porto.' }])).not.toBe(keyOf(turn(1)));
    expect(keyOf([{ role: 'system', content: 'Be terse.' }, first])).not.toBe(keyOf(turn(1)));
  });

  it('never gives two keys (two users) or two models the same conversation for the same messages', () => {
    expect(keyOf(turn(3), { tokenId: 1 })).not.toBe(keyOf(turn(3), { tokenId: 2 }));
    expect(keyOf(turn(3), { model: 'a' })).not.toBe(keyOf(turn(3), { model: 'b' }));
  });

  it("takes a session header over the messages: Claude Code's first, then x-session-id, per key and model", () => {
    const byClaude = keyOf(turn(1), { headers: { 'x-claude-code-session-id': 's-1' } });
    expect(keyOf([{ role: 'user', content: 'something else entirely' }], { headers: { 'x-claude-code-session-id': 's-1' } })).toBe(byClaude);
    expect(keyOf(turn(1), { headers: { 'x-claude-code-session-id': 's-1', 'x-session-id': 'other' } })).toBe(byClaude);
    expect(keyOf(turn(1), { headers: { 'x-session-id': 's-1' } })).toBe(byClaude);
    expect(keyOf(turn(1), { headers: { 'x-session-id': 's-2' } })).not.toBe(byClaude);
    expect(keyOf(turn(1), { headers: { 'x-session-id': 's-1' }, tokenId: 8 })).not.toBe(byClaude);
    expect(byClaude).not.toBe(keyOf(turn(1)));
    // A blank header names nothing: the messages do.
    expect(keyOf(turn(2), { headers: { 'x-session-id': '  ' } })).toBe(keyOf(turn(1)));
  });

  it('keeps the session id and the messages out of the key, and takes a continued conversation as it is', () => {
    const key = keyOf(turn(1), { headers: { 'x-session-id': 'secret-session' } })!;
    expect(key).not.toContain('secret');
    expect(keyOf(turn(1))).not.toContain('Lisbon');
    expect(conversationKey({ tokenId: 7, model: 'gpt-x', continues: key, headers: { 'x-session-id': 'other' } })).toBe(key);
  });

  it('has no key for a request with no session header and no opening', () => {
    expect(keyOf([{ role: 'system', content: 'only a system prompt' }])).toBeUndefined();
    expect(conversationKey({ tokenId: 7, model: 'gpt-x' })).toBeUndefined();
  });
});

describe('conversationOf', () => {
  it('marks a chat that holds only its opening (perhaps a one-off), never a later turn or a named session', () => {
    const of = (messages: { role: string }[], headers?: Record<string, string>) => conversationOf({ tokenId: 7, model: 'gpt-x', headers, ...chatOpening(messages) });
    expect(of(turn(1))).toEqual({ key: keyOf(turn(1)), opening: true });
    expect(of(turn(2))).toEqual({ key: keyOf(turn(1)) });
    expect(of(turn(1), { 'x-session-id': 's' })).toEqual({ key: expect.any(String) });
  });
});

describe('sessionIdOf', () => {
  it('reads the first value of a repeated header', () => {
    expect(sessionIdOf({ 'x-session-id': ['a', 'b'] })).toBe('a');
    expect(sessionIdOf({})).toBeUndefined();
    expect(sessionIdOf(undefined)).toBeUndefined();
  });
});

describe('conversationKey of a large opening', () => {
  it('tells two openings of one length apart by their start, and of one start by their length', () => {
    const big = (start: string, length: number) => keyOf([{ role: 'user', content: start + 'x'.repeat(length) }]);
    expect(big('a', 200_000)).toBe(big('a', 200_000));
    expect(big('a', 200_000)).not.toBe(big('b', 200_000));
    expect(big('a', 200_000)).not.toBe(big('a', 200_001));
  });
});
