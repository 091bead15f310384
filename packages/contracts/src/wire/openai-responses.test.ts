import { describe, expect, it } from 'vitest';
import { responsesRequestSchema, responsesRequestTokens, responsesWorstCase } from './openai-responses.ts';
import { NON_TEXT_PART_ESTIMATE, NON_TEXT_PART_TOKENS } from '../worst-case-usage.ts';

const body = (content: unknown) => responsesRequestSchema.parse({ model: 'm', max_output_tokens: 100, input: [{ role: 'user', content }] });
const photo = `data:image/jpeg;base64,${'A'.repeat(800_000)}`;

describe('a Responses request\'s hold and estimate', () => {
  it('holds every image or file at least the flat count, given by URL or id as inline, not its reference\'s few bytes', () => {
    for (const part of [
      { type: 'input_image', image_url: 'https://example.com/large.png' },
      { type: 'input_image', file_id: 'file-abc' },
      { type: 'input_file', file_url: 'https://example.com/report.pdf' },
      { type: 'input_file', file_id: 'file-abc' },
    ]) {
      const request = body([{ type: 'input_text', text: 'what is this?' }, part]);
      expect(responsesRequestTokens(request, 'hold')).toBeGreaterThanOrEqual(NON_TEXT_PART_TOKENS);
      expect(responsesRequestTokens(request)).toBeGreaterThanOrEqual(NON_TEXT_PART_ESTIMATE);
      expect(responsesWorstCase(request)).toBeGreaterThanOrEqual(NON_TEXT_PART_TOKENS + 100);
    }
  });

  it('holds an inline image at the flat count, not its base64\'s bytes, and an inline file by its bytes', () => {
    const image = body([{ type: 'input_image', image_url: photo }]);
    expect(responsesRequestTokens(image, 'hold')).toBeGreaterThanOrEqual(NON_TEXT_PART_TOKENS);
    expect(responsesRequestTokens(image, 'hold')).toBeLessThan(NON_TEXT_PART_TOKENS + 200);
    expect(responsesRequestTokens(image)).toBeLessThan(NON_TEXT_PART_ESTIMATE + 100);
    const pdf = body([{ type: 'input_file', filename: 'a.pdf', file_data: `data:application/pdf;base64,${'A'.repeat(300_000)}` }]);
    expect(responsesRequestTokens(pdf, 'hold')).toBeGreaterThan(300_000);
  });

  it('counts two images as two, in a function call\'s output too', () => {
    const one = responsesRequestSchema.parse({ model: 'm', input: [{ type: 'function_call_output', call_id: 'c', output: [{ type: 'input_image', image_url: 'https://example.com/a.png' }] }] });
    const two = responsesRequestSchema.parse({ model: 'm', input: [{ type: 'function_call_output', call_id: 'c', output: [{ type: 'input_image', image_url: 'https://example.com/a.png' }, { type: 'input_image', image_url: 'https://example.com/b.png' }] }] });
    expect(responsesRequestTokens(two, 'hold') - responsesRequestTokens(one, 'hold')).toBeGreaterThanOrEqual(NON_TEXT_PART_TOKENS);
    expect(responsesRequestTokens(two) - responsesRequestTokens(one)).toBeGreaterThanOrEqual(NON_TEXT_PART_ESTIMATE - 10);
  });
});
