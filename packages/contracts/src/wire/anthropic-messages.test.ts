import { describe, expect, it } from 'vitest';
import { countTokensRequestSchema, messagesRequestSchema, messagesRequestTokens, messagesWorstCase } from './anthropic-messages.ts';
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

describe('what a Messages request may not reach', () => {
  const refusal = (extra: Record<string, unknown>, content: unknown = 'hi') => {
    const parsed = messagesRequestSchema.safeParse({ model: 'm', max_tokens: 10, messages: [{ role: 'user', content }], ...extra });
    return parsed.success ? undefined : parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`).join('; ');
  };

  it('refuses what lies in the channel\'s shared account, or costs past the quota, naming the field and why', () => {
    expect(refusal({}, [{ type: 'document', source: { type: 'file', file_id: 'file_1' } }])).toMatch(/^messages\.0\.content\.0\.source\.type: is not served: a file belongs to the channel's Anthropic account/);
    expect(refusal({}, [{ type: 'image', source: { type: 'file', file_id: 'file_1' } }])).toMatch(/a file belongs/);
    expect(refusal({}, [{ type: 'tool_result', tool_use_id: 't', content: [{ type: 'image', source: { type: 'file', file_id: 'file_1' } }] }])).toMatch(/^messages\.0\.content\.0\.content\.0\.source\.type: is not served/);
    expect(refusal({}, [{ type: 'container_upload', file_id: 'file_1' }])).toMatch(/container belong/);
    expect(refusal({ container: 'container_1' })).toMatch(/^container: is not served: a container belongs/);
    expect(refusal({ mcp_servers: [{ type: 'url', url: 'https://mcp.example.com', name: 'x' }] })).toMatch(/^mcp_servers: is not served: a remote MCP server/);
    for (const type of ['web_search_20250305', 'web_fetch_20250910', 'code_execution_20250825']) {
      expect(refusal({ tools: [{ type, name: 'x' }] })).toMatch(new RegExp(`^tools\\.0\\.type: is not served: ${type} is a server tool`));
    }
    expect(countTokensRequestSchema.safeParse({ model: 'm', messages: [{ role: 'user', content: 'x' }], tools: [{ type: 'web_search_20250305', name: 'web_search' }] }).success).toBe(false);
  });

  it('takes tools the client runs and media by their bytes or URL', () => {
    expect(refusal({ tools: [{ name: 'get_weather', input_schema: { type: 'object' } }, { type: 'bash_20250124', name: 'bash' }, { type: 'text_editor_20250728', name: 'str_replace_based_edit_tool' }] })).toBeUndefined();
    expect(refusal({}, [{ type: 'image', source: { type: 'url', url: 'https://example.com/a.png' } }, { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: 'AAAA' } }])).toBeUndefined();
  });
});
