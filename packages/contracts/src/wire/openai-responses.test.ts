import { describe, expect, it } from 'vitest';
import { responsesRequestSchema, responsesRequestTokens, responsesWorstCase } from './openai-responses.ts';
import { NON_TEXT_PART_ESTIMATE, NON_TEXT_PART_TOKENS } from '../worst-case-usage.ts';

const body = (content: unknown) => responsesRequestSchema.parse({ model: 'm', max_output_tokens: 100, input: [{ role: 'user', content }] });
const photo = `data:image/jpeg;base64,${'A'.repeat(800_000)}`;

describe('a Responses request\'s hold and estimate', () => {
  it('holds every image or file at least the flat count, given by URL as inline, not its reference\'s few bytes', () => {
    for (const part of [
      { type: 'input_image', image_url: 'https://example.com/large.png' },
      { type: 'input_file', file_url: 'https://example.com/report.pdf' },
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

describe('what a Responses request may not reach', () => {
  const refusal = (extra: Record<string, unknown>, input: unknown = 'hi') => {
    const parsed = responsesRequestSchema.safeParse({ model: 'm', input, ...extra });
    return parsed.success ? undefined : parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`).join('; ');
  };

  it('refuses what lies in the channel\'s shared account, or costs past the quota, naming the field and why', () => {
    expect(refusal({ conversation: 'conv_123' })).toMatch(/^conversation: is not served: a conversation belongs to the channel's OpenAI account/);
    expect(refusal({ prompt: { id: 'pmpt_1' } })).toMatch(/^prompt: is not served: a stored prompt belongs/);
    expect(refusal({ service_tier: 'priority' })).toMatch(/^service_tier: must be "auto", "default" or "flex": a premium tier costs more than the quota counts/);
    expect(refusal({ tools: [{ type: 'file_search', vector_store_ids: ['vs_1'] }] })).toMatch(/tools\.0.*vector store belongs/);
    expect(refusal({ tools: [{ type: 'code_interpreter', container: 'cntr_1' }] })).toMatch(/tools\.0.*container belongs/);
    expect(refusal({}, [{ role: 'user', content: [{ type: 'input_file', file_id: 'file-1' }] }])).toMatch(/^input\.0\.content\.0\.file_id: is not served: a file belongs/);
    expect(refusal({}, [{ role: 'user', content: [{ type: 'input_image', file_id: 'file-1' }] }])).toMatch(/file_id: is not served/);
  });

  it('takes what reaches nothing of the account: web search, a code interpreter in a new container, another tier, files by their bytes or URL', () => {
    expect(refusal({ tools: [{ type: 'web_search' }, { type: 'web_search_preview' }, { type: 'code_interpreter', container: { type: 'auto' } }], service_tier: 'flex' })).toBeUndefined();
    expect(refusal({ service_tier: 'auto' })).toBeUndefined();
    expect(refusal({}, [{ role: 'user', content: [{ type: 'input_file', file_url: 'https://example.com/a.pdf' }, { type: 'input_image', image_url: 'https://example.com/a.png' }] }])).toBeUndefined();
  });
});
