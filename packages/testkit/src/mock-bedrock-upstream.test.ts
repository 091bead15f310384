/**
 * The mock Bedrock runtime over signed HTTP: what it takes and refuses of Converse's image,
 * document and reasoning blocks (a ValidationException, 400, its type in `x-amzn-ErrorType`), and
 * its reasoning answered whole and streamed in AWS's event stream, decoded by the AWS SDK's codec.
 * The gateway's e2e tests rely on these refusals: a mock that took a malformed block would let a
 * mapping bug through.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { Sha256 } from '@aws-crypto/sha256-js';
import { EventStreamCodec } from '@smithy/core/event-streams';
import { SignatureV4 } from '@smithy/signature-v4';
import { signatureOf } from './mock-bedrock-checks.ts';
import { BEDROCK_THOUGHT } from './mock-bedrock-reply.ts';
import { startMockBedrockUpstream, type MockBedrockUpstream } from './mock-bedrock-upstream.ts';

const MODEL = 'anthropic.claude-sonnet-4-20250514-v1:0';
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';
const PDF = Buffer.from('%PDF-1.4\n1 0 obj <<>> endobj\ntrailer <<>>\n%%EOF\n').toString('base64');
const utf8 = new TextDecoder();
const codec = new EventStreamCodec((bytes) => utf8.decode(bytes), (text) => new TextEncoder().encode(text));

let mock: MockBedrockUpstream;
beforeAll(async () => {
  mock = await startMockBedrockUpstream();
});
afterAll(() => mock.close());
beforeEach(() => mock.reset());

/** A Converse call signed as the AWS SDK signs it. */
async function converse(body: unknown, stream = false) {
  const url = new URL(`${mock.url}/model/${encodeURIComponent(MODEL)}/${stream ? 'converse-stream' : 'converse'}`);
  const signer = new SignatureV4({ service: 'bedrock', region: mock.region, credentials: mock.key, sha256: Sha256 });
  const raw = JSON.stringify(body);
  const signed = await signer.sign({ method: 'POST', protocol: 'http:', hostname: url.hostname, port: Number(url.port), path: url.pathname, query: {}, headers: { 'content-type': 'application/json', host: url.host }, body: raw });
  return fetch(url, { method: 'POST', headers: signed.headers as Record<string, string>, body: raw });
}

/** A stream's events as `[type, payload]`, decoded frame by frame. */
async function eventsOf(response: Response): Promise<[string, any][]> {
  let bytes = Buffer.from(await response.arrayBuffer());
  const events: [string, any][] = [];
  while (bytes.length > 0) {
    const length = bytes.readUInt32BE(0);
    const message = codec.decode(bytes.subarray(0, length));
    events.push([String(message.headers[':event-type']?.value), JSON.parse(utf8.decode(message.body))]);
    bytes = bytes.subarray(length);
  }
  return events;
}

const user = (...content: unknown[]) => ({ messages: [{ role: 'user', content }], inferenceConfig: { maxTokens: 4096 } });
const thinking = { additionalModelRequestFields: { thinking: { type: 'enabled', budget_tokens: 2048 } } };

async function refusalOf(body: unknown): Promise<{ status: number; type: string | null; message: string }> {
  const response = await converse(body);
  return { status: response.status, type: response.headers.get('x-amzn-errortype'), message: ((await response.json()) as { message: string }).message };
}

describe('the mock Bedrock runtime', () => {
  it('takes image and document blocks as Converse defines them, keeps them as received, and says what it saw', async () => {
    const image = { image: { format: 'png', source: { bytes: PNG } } };
    const document = { document: { format: 'pdf', name: 'Quarterly report (draft)', source: { bytes: PDF } } };
    const response = await converse(user(image, document, { text: 'Describe these' }));
    expect(response.status).toBe(200);
    const reply = (await response.json()) as { output: { message: { content: { text: string }[] } } };
    expect(reply.output.message.content).toEqual([{ text: `Seen: image png ${Buffer.from(PNG, 'base64').length} bytes; document pdf 'Quarterly report (draft)' ${Buffer.from(PDF, 'base64').length} bytes` }]);
    expect(mock.requests[0]!.body).toMatchObject({ messages: [{ content: [image, document, { text: 'Describe these' }] }] });
  });

  it('refuses malformed image and document blocks with a ValidationException naming the block, and documents of one name', async () => {
    const at = 'messages.1.member.content.1.member';
    const cases: [unknown, RegExp][] = [
      [{ image: { format: 'bmp', source: { bytes: PNG } } }, new RegExp(`Value 'bmp' at '${at}.image.format' failed to satisfy constraint`)],
      [{ image: { format: 'png', source: {} } }, /image\.source\.bytes' failed to satisfy constraint: Member must not be null/],
      [{ image: { format: 'png', source: { bytes: 'not base64!' } } }, /Invalid base64/],
      [{ image: { format: 'jpeg', source: { bytes: PNG } } }, /not a valid jpeg image/],
      [{ document: { format: 'pdf', name: 'report.pdf', source: { bytes: PDF } } }, /document name 'report.pdf'/],
      [{ document: { format: 'txt', source: { bytes: PDF } } }, /document name 'undefined'/],
      [{ document: { format: 'docx', name: 'notes', source: { bytes: PDF } } }, /not a valid docx file/],
      [{ document: { format: 'rtf', name: 'notes', source: { bytes: PDF } } }, /Value 'rtf'/],
    ];
    const report = (name: string) => ({ document: { format: 'pdf', name, source: { bytes: PDF } } });
    cases.push(
      [[report('report'), { text: 'and again' }, report('report')], /duplicate document names/],
      [Array.from({ length: 6 }, (_, i) => report(`part ${i}`)), /more than 5 documents/],
      [Array.from({ length: 21 }, () => ({ image: { format: 'png', source: { bytes: PNG } } })), /more than 20 images/],
    );
    for (const [block, message] of cases) {
      expect(await refusalOf(user(...[block].flat()))).toEqual({ status: 400, type: expect.stringMatching(/^ValidationException:/), message: expect.stringMatching(message) });
    }
    expect(mock.completed).toBe(0);
  });

  it('reasons when asked, whole: a reasoningContent block with its signature before the text', async () => {
    const response = await converse({ ...user({ text: 'Think first' }), ...thinking });
    const reply = (await response.json()) as { output: { message: { content: unknown[] } } };
    expect(reply.output.message.content).toEqual([{ reasoningContent: { reasoningText: { text: BEDROCK_THOUGHT, signature: signatureOf(BEDROCK_THOUGHT) } } }, { text: 'Hello from Bedrock' }]);
    const old = await converse({ ...user({ text: 'Think first' }), additionalModelRequestFields: { reasoning_config: { type: 'enabled', budget_tokens: 1024 } } });
    expect(JSON.stringify(await old.json())).toContain(BEDROCK_THOUGHT);
    const plain = await converse(user({ text: 'hi' }));
    expect(JSON.stringify(await plain.json())).not.toContain('reasoningContent');
  });

  it('reasons when asked, streamed: reasoningContent text deltas, then its signature, at the first index; the text at the next', async () => {
    const events = await eventsOf(await converse({ ...user({ text: 'Think first' }), ...thinking }, true));
    const deltas = events.filter(([type]) => type === 'contentBlockDelta').map(([, event]) => event);
    const thought = deltas.filter((event) => event.delta.reasoningContent?.text !== undefined);
    expect(thought.map((event) => event.delta.reasoningContent.text).join('')).toBe(BEDROCK_THOUGHT);
    expect(thought.every((event) => event.contentBlockIndex === 0)).toBe(true);
    expect(deltas.find((event) => event.delta.reasoningContent?.signature)).toEqual({ contentBlockIndex: 0, delta: { reasoningContent: { signature: signatureOf(BEDROCK_THOUGHT) } } });
    const text = deltas.filter((event) => event.delta.text !== undefined);
    expect([text.map((event) => event.delta.text).join(''), text[0].contentBlockIndex]).toEqual(['Hello from Bedrock', 1]);
    expect(events.filter(([type]) => type === 'contentBlockStop').map(([, event]) => event.contentBlockIndex)).toEqual([0, 1]);
  });

  it('refuses a thinking budget Claude refuses, and a replayed thought whose text changed under its signature', async () => {
    const budget = (budget_tokens: number, fields = {}) => ({ ...user({ text: 'hi' }), ...fields, additionalModelRequestFields: { thinking: { type: 'enabled', budget_tokens } } });
    expect((await refusalOf(budget(512))).message).toMatch(/greater than or equal to 1024/);
    expect((await refusalOf(budget(4096))).message).toMatch(/`max_tokens` must be greater than `thinking.budget_tokens`/);
    expect((await refusalOf(budget(1024, { inferenceConfig: { maxTokens: 4096, temperature: 0.5 } }))).message).toMatch(/temperature/);
    const replayed = (text: string) => ({
      messages: [
        { role: 'user', content: [{ text: 'Think first' }] },
        { role: 'assistant', content: [{ reasoningContent: { reasoningText: { text, signature: signatureOf(BEDROCK_THOUGHT) } } }, { text: 'Hello' }] },
        { role: 'user', content: [{ text: 'And now?' }] },
      ],
      ...thinking,
      inferenceConfig: { maxTokens: 4096 },
    });
    expect((await converse(replayed(BEDROCK_THOUGHT))).status).toBe(200);
    expect((await refusalOf(replayed(`${BEDROCK_THOUGHT} (edited)`))).message).toMatch(/Invalid `signature`/);
  });
});
