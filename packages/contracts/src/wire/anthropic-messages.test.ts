import { describe, expect, it } from 'vitest';
import { messagesRequestSchema, messagesRequestTokens, messagesWorstCase } from './anthropic-messages.ts';
import { NON_TEXT_PART_ESTIMATE, NON_TEXT_PART_TOKENS } from '../worst-case-usage.ts';

const photo = 'A'.repeat(800_000);
const body = (content: unknown) => messagesRequestSchema.parse({ model: 'm', max_tokens: 100, messages: [{ role: 'user', content }] });

describe('a Messages request\'s hold and estimate', () => {
  it('holds the prompt at a token a byte plus max_tokens, an inline image at a flat count, a PDF by its bytes', () => {
    const text = body('hello');
    expect(messagesWorstCase(text)).toBe(messagesRequestTokens(text, 'hold') + 100);
    const image = body([{ type: 'image', source: { type: 'base64', media_type: 'image/jpeg', data: photo } }]);
    const held = messagesRequestTokens(image, 'hold');
    expect(held).toBeGreaterThan(NON_TEXT_PART_TOKENS);
    expect(held).toBeLessThan(NON_TEXT_PART_TOKENS + 200);
    expect(messagesRequestTokens(image)).toBeLessThan(NON_TEXT_PART_ESTIMATE + 100);
    const pdf = body([{ type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: photo } }]);
    expect(messagesRequestTokens(pdf, 'hold')).toBeGreaterThan(photo.length);
  });

  it('passes fields it does not know, and a role it does not, through the schema unchanged', () => {
    const raw = { model: 'm', max_tokens: 5, output_config: { effort: 'low' }, messages: [{ role: 'system', content: 'x', extra: 1 }, { role: 'user', content: [{ type: 'server_tool_use', id: 'a' }] }] };
    expect(messagesRequestSchema.parse(raw)).toEqual(raw);
    expect(messagesRequestSchema.safeParse({ model: 'm', messages: [{ role: 'user', content: 'x' }] }).success).toBe(false);
  });
});
