/**
 * Claude thinks at every reasoning effort a client asks for, within the default max_tokens, on
 * an anthropic channel and on Vertex's Claude: real Redis, completion-worker and gateway
 * processes, the Anthropic mock (and Vertex's, which takes Anthropic's body) refusing a thinking
 * budget below 1024 or not below max_tokens as Anthropic does, and the `openai` and
 * `@google/genai` SDKs as clients. A medium or high effort under the default max_tokens (4096)
 * used to ask for no thinking at all on these channels: its budget (4096, 16384) did not fit.
 */
import { describe, expect } from 'vitest';
import OpenAI from 'openai';
import { GoogleGenAI } from '@google/genai';
import { ANTHROPIC_THOUGHT } from '@gateway/testkit';
import { stackTest } from '@gateway/testkit/fixtures';

const it = stackTest({
  workers: ['completion-worker'],
  env: { REQUEST_TIMEOUT_MS: '15000' },
  channelDefaults: { timeout_ms: 5000 },
}).extend('clients', async ({ stack }) => (key: string) => ({
  openai: new OpenAI({ baseURL: `${stack.gateway.url}/v1`, apiKey: key, maxRetries: 0, timeout: 15_000 }),
  google: new GoogleGenAI({ apiKey: key, httpOptions: { baseUrl: stack.gateway.url, timeout: 15_000 } }),
}));

let seq = 0;
const uniqueModel = () => `claude-thinking-${++seq}`;
const CLAUDE_ON_VERTEX = 'claude-sonnet-4@20250514';

/** The reasoning summary and the answer of a Responses reply. */
function readResponse(response: OpenAI.Responses.Response): [string | undefined, string] {
  const reasoning = response.output.find((item) => item.type === 'reasoning') as OpenAI.Responses.ResponseReasoningItem | undefined;
  return [reasoning?.summary[0]?.text, response.output_text];
}

describe("Claude's thinking at the effort the client asks", () => {
  it('thinks at a medium and a high reasoning effort on an anthropic channel, with no max tokens set, whole and streamed', async ({ upstream, channel, apiKey, clients }) => {
    const mock = await upstream.anthropic({ text: 'Forty-two.' });
    const model = uniqueModel();
    await channel(mock, ['claude-upstream'], { model_mapping: { [model]: 'claude-upstream' } });
    const { openai } = clients((await apiKey()).key);

    const medium = await openai.responses.create({ model, input: 'Think, then answer.', reasoning: { effort: 'medium' }, store: false });
    expect(readResponse(medium)).toEqual([ANTHROPIC_THOUGHT, 'Forty-two.']);
    const high = await openai.responses.stream({ model, input: 'Think, then answer.', reasoning: { effort: 'high' }, store: false }).finalResponse();
    expect(readResponse(high)).toEqual([ANTHROPIC_THOUGHT, 'Forty-two.']);
    // The budget Anthropic takes: at least 1024, below max_tokens, the answer left 1024 tokens.
    expect(mock.requests.map((r) => [r.body.max_tokens, r.body.thinking])).toEqual([
      [4096, { type: 'enabled', budget_tokens: 3072 }],
      [4096, { type: 'enabled', budget_tokens: 3072 }],
    ]);
  });

  it("thinks when Gemini's SDK asks for thoughts without a budget, within the default max tokens", async ({ upstream, channel, apiKey, clients }) => {
    const mock = await upstream.anthropic({ text: 'Forty-two.' });
    const model = uniqueModel();
    await channel(mock, [model]);
    const { google } = clients((await apiKey()).key);
    const reply = await google.models.generateContent({ model, contents: 'Think, then answer.', config: { thinkingConfig: { includeThoughts: true } } });
    const parts = reply.candidates?.[0]?.content?.parts ?? [];
    expect(parts.map((part) => [part.thought ?? false, part.text])).toEqual([[true, ANTHROPIC_THOUGHT], [false, 'Forty-two.']]);
    expect(mock.requests.at(-1)!.body).toMatchObject({ max_tokens: 4096, thinking: { type: 'enabled', budget_tokens: 3072 } });
  });

  it("thinks at a high reasoning effort on Vertex's Claude, with no max tokens set", async ({ upstream, channel, apiKey, clients }) => {
    const mock = await upstream.vertex({}, { text: 'Forty-two.' });
    const model = uniqueModel();
    await channel(mock, [CLAUDE_ON_VERTEX], { model_mapping: { [model]: CLAUDE_ON_VERTEX } });
    const { openai } = clients((await apiKey()).key);
    const high = await openai.responses.create({ model, input: 'Think, then answer.', reasoning: { effort: 'high' }, store: false });
    expect(readResponse(high)).toEqual([ANTHROPIC_THOUGHT, 'Forty-two.']);
    expect(mock.requests.at(-1)).toMatchObject({ publisher: 'anthropic', body: { max_tokens: 4096, thinking: { type: 'enabled', budget_tokens: 3072 } } });
  });
});
