/**
 * The mock Bedrock runtime's answers: a Converse reply, ConverseStream's events in AWS's binary
 * event stream (encoded by the AWS SDK's own codec), and Titan's and Cohere's embeddings through
 * InvokeModel. The reply says what media the last user turn held ("Seen: image png 67 bytes"),
 * so a test reads in the answer what reached the model. Where the request asks for Claude's
 * thinking, the answer reasons first: a `reasoningContent` block with its signature whole, or
 * `contentBlockDelta` events of `reasoningContent.text` then `.signature` streamed, each block at
 * its own `contentBlockIndex` as Bedrock numbers them.
 */
import { createHash } from 'node:crypto';
import { EventStreamCodec } from '@smithy/core/event-streams';
import { signatureOf, thinkingOf } from './mock-bedrock-checks.ts';
import { sleepUnlessGone, type MockExchange } from './mock-upstream.ts';

/** What the mock's model thinks when a request turns thinking on. */
export const BEDROCK_THOUGHT = 'The user wants a short answer, so I will answer briefly.';

const utf8 = new TextDecoder();
const codec = new EventStreamCodec((bytes) => utf8.decode(bytes), (text) => new TextEncoder().encode(text));

type Loose = Record<string, unknown>;
type Block = { text?: string; image?: { format?: string; source?: { bytes?: string } }; document?: { format?: string; name?: string; source?: { bytes?: string } } };

const words = (text: string) => text.split(/\s+/).filter(Boolean);
const tokens = (text: string) => Math.max(1, Math.ceil(text.length / 4));
const byteLength = (base64: string | undefined) => Buffer.from(base64 ?? '', 'base64').length;

/** The last user turn of a Converse request: its text, a description of its media, and whether tools are offered. */
function promptOf(body: Loose): { text: string; media: string; tools: boolean } {
  const messages = (body.messages ?? []) as { role: string; content: Block[] }[];
  const last = [...messages].reverse().find((m) => m.role === 'user');
  const blocks = last?.content ?? [];
  const media = blocks.flatMap((block) => {
    if (block.image) return [`image ${block.image.format} ${byteLength(block.image.source?.bytes)} bytes`];
    if (block.document) return [`document ${block.document.format} '${block.document.name}' ${byteLength(block.document.source?.bytes)} bytes`];
    return [];
  });
  return { text: blocks.map((block) => block.text ?? '').join(' '), media: media.length > 0 ? `Seen: ${media.join('; ')}` : '', tools: Array.isArray((body.toolConfig as { tools?: unknown } | undefined)?.tools) };
}

const encode = (type: string, payload: unknown) => codec.encode({
  headers: { ':message-type': { type: 'string', value: 'event' }, ':event-type': { type: 'string', value: type }, ':content-type': { type: 'string', value: 'application/json' } },
  body: new TextEncoder().encode(JSON.stringify(payload)),
});

export async function answerConverse({ res, request, gone }: MockExchange, action: string, b: { text?: string; chunkDelayMs?: number }): Promise<void> {
  const body = request.json ?? {};
  if (action === 'invoke') return embed(res, body);
  const prompt = promptOf(body);
  const weather = prompt.tools && /weather/i.test(prompt.text);
  const text = b.text ?? (prompt.media || 'Hello from Bedrock');
  const thought = thinkingOf(body)?.type === 'enabled' ? { text: BEDROCK_THOUGHT, signature: signatureOf(BEDROCK_THOUGHT) } : undefined;
  const outputTokens = (weather ? 12 : words(text).length) + (thought ? tokens(thought.text) : 0);
  const usage = { inputTokens: tokens(JSON.stringify(body.messages ?? [])), outputTokens, totalTokens: 0 };
  usage.totalTokens = usage.inputTokens + usage.outputTokens;
  const toolUse = { toolUseId: 'tooluse_mock_1', name: 'get_weather', input: { city: 'Paris' } };
  const stopReason = weather ? 'tool_use' : 'end_turn';
  if (action === 'converse') {
    const content = [...(thought ? [{ reasoningContent: { reasoningText: thought } }] : []), weather ? { toolUse } : { text }];
    const reply = { output: { message: { role: 'assistant', content } }, stopReason, usage, metrics: { latencyMs: 1 } };
    return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(reply));
  }
  const events: [string, unknown][] = [['messageStart', { role: 'assistant' }]];
  let index = 0;
  if (thought) {
    for (const [i, word] of words(thought.text).entries()) events.push(['contentBlockDelta', { contentBlockIndex: index, delta: { reasoningContent: { text: i === 0 ? word : ` ${word}` } } }]);
    events.push(['contentBlockDelta', { contentBlockIndex: index, delta: { reasoningContent: { signature: thought.signature } } }], ['contentBlockStop', { contentBlockIndex: index }]);
    index += 1;
  }
  if (weather) {
    const args = JSON.stringify(toolUse.input);
    events.push(['contentBlockStart', { contentBlockIndex: index, start: { toolUse: { toolUseId: toolUse.toolUseId, name: toolUse.name } } }]);
    for (const piece of [args.slice(0, 5), args.slice(5)]) events.push(['contentBlockDelta', { contentBlockIndex: index, delta: { toolUse: { input: piece } } }]);
  } else {
    for (const [i, word] of words(text).entries()) events.push(['contentBlockDelta', { contentBlockIndex: index, delta: { text: i === 0 ? word : ` ${word}` } }]);
  }
  events.push(['contentBlockStop', { contentBlockIndex: index }], ['messageStop', { stopReason }], ['metadata', { usage, metrics: { latencyMs: 1 } }]);
  res.writeHead(200, { 'content-type': 'application/vnd.amazon.eventstream' });
  for (const [type, payload] of events) {
    if (gone.aborted) return;
    res.write(encode(type, payload));
    if (b.chunkDelayMs) await sleepUnlessGone(b.chunkDelayMs, gone);
  }
  res.end();
}

/** A vector of 8 floats from the text's hash: the same text, the same vector. */
const vectorOf = (text: string) => Array.from(createHash('sha256').update(text).digest().subarray(0, 8), (byte) => (byte - 127.5) / 127.5);

function embed(res: MockExchange['res'], body: Loose): void {
  const reply = (status: number, value: unknown) => void res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(value));
  if (typeof body.inputText === 'string') return reply(200, { embedding: vectorOf(body.inputText), inputTextTokenCount: tokens(body.inputText) });
  if (Array.isArray(body.texts) && body.texts.every((t) => typeof t === 'string') && typeof body.input_type === 'string') {
    return reply(200, { id: crypto.randomUUID(), embeddings: (body.texts as string[]).map(vectorOf), texts: body.texts, response_type: 'embeddings_floats' });
  }
  return reply(400, { message: 'Malformed input request: neither inputText (Titan) nor texts with input_type (Cohere)' });
}
