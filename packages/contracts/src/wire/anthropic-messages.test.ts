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

  it('holds an image or document given by URL at least the flat count, not its URL\'s few bytes, and a text document by its text', () => {
    for (const block of [
      { type: 'image', source: { type: 'url', url: 'https://example.com/large.png' } },
      { type: 'document', source: { type: 'url', url: 'https://example.com/report.pdf' } },
    ]) {
      const request = body([block, { type: 'text', text: 'what is this?' }]);
      expect(messagesRequestTokens(request, 'hold')).toBeGreaterThanOrEqual(NON_TEXT_PART_TOKENS);
      expect(messagesRequestTokens(request)).toBeGreaterThanOrEqual(NON_TEXT_PART_ESTIMATE);
      expect(messagesWorstCase(request)).toBeGreaterThanOrEqual(NON_TEXT_PART_TOKENS + 100);
    }
    const textDocument = body([{ type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'x'.repeat(10_000) } }]);
    expect(messagesRequestTokens(textDocument, 'hold')).toBeGreaterThanOrEqual(10_000);
    expect(messagesRequestTokens(textDocument, 'hold')).toBeLessThan(10_300);
  });
});
