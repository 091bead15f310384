/**
 * Images, documents and reasoning on a bedrock channel end to end (issue 44): real Redis,
 * completion-worker and gateway processes, a mock Bedrock runtime that verifies Signature V4 and
 * checks image and document blocks as Converse does, and the real SDKs as clients: `openai`
 * through chat completions, `@anthropic-ai/sdk` through the Messages door. A user sees the media
 * reach the model (the mock's reply says what it saw, and what it received is read back), the
 * thinking come back whole and streamed with its signature, and a malformed image refused with a
 * 400 in the shape of the door they called.
 */
import { randomBytes } from 'node:crypto';
import { describe, expect } from 'vitest';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { GoogleGenAI } from '@google/genai';
import { BEDROCK_THOUGHT, caught, type MockBedrockUpstream } from '@gateway/testkit';
import { stackTest } from '@gateway/testkit/fixtures';

let seq = 0;
const CLAUDE = 'anthropic.claude-sonnet-4-20250514-v1:0';

const it = stackTest({
  workers: ['completion-worker'],
  env: { REQUEST_TIMEOUT_MS: '15000' },
  channelDefaults: { timeout_ms: 5000 },
}).extend('clients', async ({ stack }) => (key: string) => ({
  openai: new OpenAI({ baseURL: `${stack.gateway.url}/v1`, apiKey: key, maxRetries: 0, timeout: 15_000 }),
  anthropic: new Anthropic({ baseURL: stack.gateway.url, apiKey: key, maxRetries: 0, timeout: 15_000 }),
  google: new GoogleGenAI({ apiKey: key, httpOptions: { baseUrl: stack.gateway.url, timeout: 15_000 } }),
})).extend('bedrockModel', async ({ upstream, channel, apiKey }) => async () => {
  // A bedrock channel serving a model of the test's own, and a key for it.
  const mock = await upstream.bedrock();
  const model = `bedrock-content-${++seq}`;
  await channel(mock, [CLAUDE], { model_mapping: { [model]: CLAUDE } });
  return { mock, model, key: (await apiKey()).key };
});

/** A 1×1 PNG and a small PDF, as a user's files would be. */
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';
const PDF = Buffer.from('%PDF-1.4\n1 0 obj <<>> endobj\ntrailer <<>>\n%%EOF\n').toString('base64');
const JPEG_BYTES = Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0, 16, 0x4a, 0x46, 0x49, 0x46]).toString('base64');
const sizeOf = (base64: string) => Buffer.from(base64, 'base64').length;
const THINKING = { type: 'enabled' as const, budget_tokens: 2048 };

/** The content blocks of the last user turn the mock received. */
const lastUserContent = (mock: MockBedrockUpstream) => (mock.requests.at(-1)!.body.messages as { role: string; content: unknown[] }[]).filter((m) => m.role === 'user').at(-1)!.content;

describe('a bedrock channel through the openai SDK', () => {
  it('sends an image_url data URL and a file part as Converse image and document bytes', async ({ bedrockModel, clients }) => {
    const { mock, model, key } = await bedrockModel();
    const reply = await clients(key).openai.chat.completions.create({
      model,
      messages: [{ role: 'user', content: [
        { type: 'text', text: 'What is in these?' },
        { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG}` } },
        { type: 'file', file: { filename: 'Quarterly report.pdf', file_data: `data:application/pdf;base64,${PDF}` } },
      ] }],
    });
    expect(reply.choices[0]!.message.content).toBe(`Seen: image png ${sizeOf(PNG)} bytes; document pdf 'Quarterly report pdf' ${sizeOf(PDF)} bytes`);
    expect(lastUserContent(mock)).toEqual([
      { text: 'What is in these?' },
      { image: { format: 'png', source: { bytes: PNG } } },
      { document: { format: 'pdf', name: 'Quarterly report pdf', source: { bytes: PDF } } },
    ]);
  });

  it("streams Claude's reasoning as reasoning_content before the answer, for a reasoning effort", async ({ bedrockModel, clients }) => {
    const { mock, model, key } = await bedrockModel();
    const stream = await clients(key).openai.chat.completions.create({ model, reasoning_effort: 'low', stream: true, messages: [{ role: 'user', content: 'Think, then answer.' }] });
    let [reasoning, text] = ['', ''];
    for await (const chunk of stream) {
      const delta = chunk.choices[0]?.delta as { content?: string | null; reasoning_content?: string } | undefined;
      reasoning += delta?.reasoning_content ?? '';
      text += delta?.content ?? '';
    }
    expect([reasoning, text]).toEqual([BEDROCK_THOUGHT, 'Hello from Bedrock']);
    expect(mock.requests.at(-1)!.body).toMatchObject({ additionalModelRequestFields: { thinking: { type: 'enabled', budget_tokens: 1024 } } });
  });

  it('reasons at every reasoning effort, within the default max tokens', async ({ bedrockModel, clients }) => {
    const { mock, model, key } = await bedrockModel();
    for (const effort of ['minimal', 'low', 'medium', 'high'] as const) {
      const reply = await clients(key).openai.chat.completions.create({ model, reasoning_effort: effort, messages: [{ role: 'user', content: 'Think, then answer.' }] });
      const message = reply.choices[0]!.message as { content: string | null; reasoning_content?: string };
      expect([effort, message.reasoning_content, message.content]).toEqual([effort, BEDROCK_THOUGHT, 'Hello from Bedrock']);
    }
    const budgets = mock.requests.map((r) => (r.body.additionalModelRequestFields as { thinking: { budget_tokens: number } }).thinking.budget_tokens);
    expect(budgets).toEqual([1024, 1024, 3072, 3072]);
  });

  it('gives a clear 400 in OpenAI\'s shape for an image Bedrock refuses, and for one the gateway cannot send', async ({ bedrockModel, clients }) => {
    const { mock, model, key } = await bedrockModel();
    const ask = (url: string) => caught(clients(key).openai.chat.completions.create({ model, messages: [{ role: 'user', content: [{ type: 'text', text: 'What is this?' }, { type: 'image_url', image_url: { url } }] }] }));

    const mislabelled = await ask(`data:image/png;base64,${JPEG_BYTES}`);
    expect(mislabelled).toBeInstanceOf(OpenAI.BadRequestError);
    expect(mislabelled.error).toMatchObject({ message: expect.stringContaining('not a valid png image') });
    expect(lastUserContent(mock)).toEqual([{ text: 'What is this?' }, { image: { format: 'png', source: { bytes: JPEG_BYTES } } }]);
    // The request's own fault: asked once, not again on the channel nor counted against it.
    expect(mock.arrived).toBe(1);

    const arrived = mock.arrived;
    const bitmap = await ask(`data:image/bmp;base64,${PNG}`);
    expect(bitmap).toBeInstanceOf(OpenAI.BadRequestError);
    expect(bitmap.error).toMatchObject({ message: expect.stringContaining('image/bmp is not a media type'), param: 'messages[0].content[1]' });
    expect(mock.arrived).toBe(arrived);
  });
});

describe('a bedrock channel through the Messages door and @anthropic-ai/sdk', () => {
  it('sends an image and a base64 PDF, and gives the thinking block back whole, which the next turn replays', async ({ bedrockModel, clients }) => {
    const { mock, model, key } = await bedrockModel();
    const { anthropic } = clients(key);
    const question: Anthropic.MessageParam = { role: 'user', content: [
      { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } },
      { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: PDF }, title: 'Contract v2.pdf' },
      { type: 'text', text: 'Summarise both.' },
    ] };
    const message = await anthropic.messages.create({ model, max_tokens: 4096, thinking: THINKING, messages: [question] });
    expect(message.content).toEqual([
      { type: 'thinking', thinking: BEDROCK_THOUGHT, signature: expect.stringMatching(/^mock-sig-/) },
      { type: 'text', text: `Seen: image png ${sizeOf(PNG)} bytes; document pdf 'Contract v2 pdf' ${sizeOf(PDF)} bytes` },
    ]);
    const sent = mock.requests.at(-1)!.body;
    expect(sent).toMatchObject({ additionalModelRequestFields: { thinking: THINKING }, inferenceConfig: { maxTokens: 4096 } });
    expect(lastUserContent(mock)).toEqual([
      { image: { format: 'png', source: { bytes: PNG } } },
      { document: { format: 'pdf', name: 'Contract v2 pdf', source: { bytes: PDF } } },
      { text: 'Summarise both.' },
    ]);

    // The thinking block goes back as it came, signature and all; the mock refuses a thought changed under its signature.
    const next = await anthropic.messages.create({ model, max_tokens: 4096, thinking: THINKING, messages: [question, { role: 'assistant', content: message.content }, { role: 'user', content: 'And in one word?' }] });
    expect(next.content.at(-1)).toEqual({ type: 'text', text: 'Hello from Bedrock' });
    const thinking = message.content[0] as Anthropic.ThinkingBlock;
    expect((mock.requests.at(-1)!.body.messages as { content: unknown[] }[])[1]!.content[0]).toEqual({ reasoningContent: { reasoningText: { text: thinking.thinking, signature: thinking.signature } } });
  });

  it('asks Claude to think for adaptive thinking, with a budget that leaves room for the answer', async ({ bedrockModel, clients }) => {
    const { mock, model, key } = await bedrockModel();
    const message = await clients(key).anthropic.messages.create({ model, max_tokens: 8000, thinking: { type: 'adaptive' }, messages: [{ role: 'user', content: 'Think, then answer.' }] });
    expect(message.content).toEqual([{ type: 'thinking', thinking: BEDROCK_THOUGHT, signature: expect.stringMatching(/^mock-sig-/) }, { type: 'text', text: 'Hello from Bedrock' }]);
    expect(mock.requests.at(-1)!.body).toMatchObject({ additionalModelRequestFields: { thinking: { type: 'enabled', budget_tokens: 4096 } }, inferenceConfig: { maxTokens: 8000 } });
  });

  it('names a document attached again later in the conversation apart, as Converse wants every name distinct', async ({ bedrockModel, clients }) => {
    const { mock, model, key } = await bedrockModel();
    const report = { type: 'document' as const, source: { type: 'base64' as const, media_type: 'application/pdf' as const, data: PDF }, title: 'report.pdf' };
    const message = await clients(key).anthropic.messages.create({ model, max_tokens: 1000, messages: [
      { role: 'user', content: [report, { type: 'text', text: 'Summarise it.' }] },
      { role: 'assistant', content: 'It is a short report.' },
      { role: 'user', content: [report, { type: 'text', text: 'I fixed a page: summarise it again.' }] },
    ] });
    expect(message.content).toEqual([{ type: 'text', text: `Seen: document pdf 'report pdf (2)' ${sizeOf(PDF)} bytes` }]);
    const names = (mock.requests.at(-1)!.body.messages as { content: { document?: { name: string } }[] }[]).flatMap((m) => m.content.flatMap((block) => (block.document ? [block.document.name] : [])));
    expect(names).toEqual(['report pdf', 'report pdf (2)']);
  });

  it('streams the thinking as thinking_delta and signature_delta events, then the text', async ({ bedrockModel, clients }) => {
    const { mock, model, key } = await bedrockModel();
    const stream = clients(key).anthropic.messages.stream({ model, max_tokens: 4096, thinking: THINKING, messages: [{ role: 'user', content: [
      { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } },
      { type: 'text', text: 'Think, then describe it.' },
    ] }] });
    const deltas: Anthropic.RawContentBlockDelta[] = [];
    for await (const event of stream) if (event.type === 'content_block_delta') deltas.push(event.delta);
    const final = await stream.finalMessage();

    const thought = deltas.flatMap((delta) => (delta.type === 'thinking_delta' ? [delta.thinking] : []));
    const signatures = deltas.flatMap((delta) => (delta.type === 'signature_delta' ? [delta.signature] : []));
    expect([thought.length > 1, thought.join(''), signatures]).toEqual([true, BEDROCK_THOUGHT, [expect.stringMatching(/^mock-sig-/)]]);
    expect(final.content).toEqual([
      { type: 'thinking', thinking: BEDROCK_THOUGHT, signature: signatures[0] },
      { type: 'text', text: `Seen: image png ${sizeOf(PNG)} bytes` },
    ]);
    expect(mock.requests.at(-1)).toMatchObject({ action: 'converse-stream', body: { additionalModelRequestFields: { thinking: THINKING } } });
  });

  it('streams thinking then a tool call, and takes the tool result back with the thinking block, as an agent loop does', async ({ bedrockModel, clients }) => {
    const { mock, model, key } = await bedrockModel();
    const { anthropic } = clients(key);
    const tools: Anthropic.Tool[] = [{ name: 'get_weather', description: 'The weather in a city', input_schema: { type: 'object', properties: { city: { type: 'string' } } } }];
    const question: Anthropic.MessageParam = { role: 'user', content: 'What is the weather in Paris?' };
    const first = await anthropic.messages.stream({ model, max_tokens: 4096, thinking: THINKING, tools, messages: [question] }).finalMessage();
    expect(first.stop_reason).toBe('tool_use');
    expect(first.content).toEqual([
      { type: 'thinking', thinking: BEDROCK_THOUGHT, signature: expect.stringMatching(/^mock-sig-/) },
      { type: 'tool_use', id: 'tooluse_mock_1', name: 'get_weather', input: { city: 'Paris' } },
    ]);

    const answer = await anthropic.messages.create({ model, max_tokens: 4096, thinking: THINKING, tools, messages: [
      question,
      { role: 'assistant', content: first.content },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'tooluse_mock_1', content: 'Sunny, 24 °C' }] },
    ] });
    expect(answer.content.at(-1)).toEqual({ type: 'text', text: 'Hello from Bedrock' });
    const sent = mock.requests.at(-1)!.body.messages as { content: unknown[] }[];
    expect(sent.slice(1)).toEqual([
      { role: 'assistant', content: [{ reasoningContent: { reasoningText: { text: BEDROCK_THOUGHT, signature: (first.content[0] as Anthropic.ThinkingBlock).signature } } }, { toolUse: { toolUseId: 'tooluse_mock_1', name: 'get_weather', input: { city: 'Paris' } } }] },
      { role: 'user', content: [{ toolResult: { toolUseId: 'tooluse_mock_1', content: [{ text: 'Sunny, 24 °C' }], status: 'success' } }] },
    ]);
  });

  it('sends a photo of a few megabytes byte for byte, signed over all of it', async ({ bedrockModel, clients }) => {
    const { mock, model, key } = await bedrockModel();
    const photo = Buffer.concat([Buffer.from(PNG, 'base64'), randomBytes(3 * 1024 * 1024)]).toString('base64');
    const message = await clients(key).anthropic.messages.create({ model, max_tokens: 100, messages: [{ role: 'user', content: [
      { type: 'image', source: { type: 'base64', media_type: 'image/png', data: photo } },
      { type: 'text', text: 'Where was this taken?' },
    ] }] });
    expect(message.content).toEqual([{ type: 'text', text: `Seen: image png ${sizeOf(photo)} bytes` }]);
    const received = lastUserContent(mock)[0] as { image: { source: { bytes: string } } };
    expect(received.image.source.bytes === photo).toBe(true);
  });

  it("gives a clear 400 in Anthropic's shape for an image Bedrock refuses", async ({ bedrockModel, clients }) => {
    const { mock, model, key } = await bedrockModel();
    const refused = await caught(clients(key).anthropic.messages.create({ model, max_tokens: 100, messages: [{ role: 'user', content: [
      { type: 'image', source: { type: 'base64', media_type: 'image/png', data: JPEG_BYTES } },
      { type: 'text', text: 'What is this?' },
    ] }] }));
    expect(refused).toBeInstanceOf(Anthropic.BadRequestError);
    expect(refused.error).toMatchObject({ type: 'error', error: { type: 'invalid_request_error', message: expect.stringContaining('not a valid png image') } });
    expect(lastUserContent(mock)[0]).toEqual({ image: { format: 'png', source: { bytes: JPEG_BYTES } } });
  });
});

describe('a bedrock channel through the Responses and Gemini doors', () => {
  it('sends input_image and input_file as image and document bytes, and gives the reasoning back as a reasoning item', async ({ bedrockModel, clients }) => {
    const { mock, model, key } = await bedrockModel();
    const response = await clients(key).openai.responses.create({
      model,
      reasoning: { effort: 'medium', summary: 'auto' },
      input: [{ role: 'user', content: [
        { type: 'input_image', image_url: `data:image/png;base64,${PNG}`, detail: 'auto' },
        { type: 'input_file', filename: 'Invoice 7.pdf', file_data: `data:application/pdf;base64,${PDF}` },
        { type: 'input_text', text: 'What are these?' },
      ] }],
    });
    expect(response.output_text).toBe(`Seen: image png ${sizeOf(PNG)} bytes; document pdf 'Invoice 7 pdf' ${sizeOf(PDF)} bytes`);
    expect(JSON.stringify(response.output.filter((item) => item.type === 'reasoning'))).toContain(BEDROCK_THOUGHT);
    expect(lastUserContent(mock)).toEqual([
      { image: { format: 'png', source: { bytes: PNG } } },
      { document: { format: 'pdf', name: 'Invoice 7 pdf', source: { bytes: PDF } } },
      { text: 'What are these?' },
    ]);
  });

  it("sends Gemini's inlineData image and PDF as image and document bytes, and the thought as a thought part", async ({ bedrockModel, clients }) => {
    const { mock, model, key } = await bedrockModel();
    const reply = await clients(key).google.models.generateContent({
      model,
      contents: [{ role: 'user', parts: [{ inlineData: { mimeType: 'image/png', data: PNG } }, { inlineData: { mimeType: 'application/pdf', data: PDF } }, { text: 'What are these?' }] }],
      config: { thinkingConfig: { includeThoughts: true, thinkingBudget: 2048 } },
    });
    const parts = reply.candidates![0]!.content!.parts!;
    expect(parts.filter((part) => part.thought).map((part) => part.text)).toEqual([BEDROCK_THOUGHT]);
    expect(reply.text).toBe(`Seen: image png ${sizeOf(PNG)} bytes; document pdf 'document' ${sizeOf(PDF)} bytes`);
    expect(lastUserContent(mock)).toMatchObject([{ image: { format: 'png', source: { bytes: PNG } } }, { document: { format: 'pdf', source: { bytes: PDF } } }, { text: 'What are these?' }]);
  });
});
