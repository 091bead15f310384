/**
 * A Bedrock runtime on a real HTTP port: `POST /model/{modelId}/converse` (a Converse reply),
 * `/converse-stream` (its events in AWS's binary event stream, encoded by the AWS SDK's own codec)
 * and `/invoke` for Titan's and Cohere's embedding bodies. It refuses what AWS refuses before
 * anything else (`mock-aws-signature.ts`): a key it does not know, a signature that does not
 * match, one more than five minutes old (403, `{"message": …}`); and a model it does not serve
 * (400 ValidationException). Its behaviours, counters and scripted failures are the shared base's.
 */
import { createHash } from 'node:crypto';
import { EventStreamCodec } from '@smithy/core/event-streams';
import { awsSignatureRefusal, type MockAwsKey } from './mock-aws-signature.ts';
import { sleepUnlessGone, startMockUpstream, type MockBehaviour, type MockExchange, type MockUpstream, type MockWireFormat, type ReceivedRequest } from './mock-upstream.ts';

export const MOCK_AWS_KEY: MockAwsKey = { accessKeyId: 'AKIAMOCKBEDROCK00001', secretAccessKey: 'mock/secret+access/key0123456789abcdefghij' };
export const MOCK_AWS_REGION = 'us-east-1';

export interface MockBedrockOptions {
  /** The keys it knows. Default: MOCK_AWS_KEY. */
  keys?: MockAwsKey[];
  /** The region signatures must name. Default: MOCK_AWS_REGION. */
  region?: string;
  /** Model ids it serves; others are a 400 ValidationException. Default: any. */
  models?: string[];
  /** How far its clock is ahead of the caller's, in milliseconds (a signature it finds expired). Default 0. */
  clockAheadMs?: number;
}

export interface MockBedrockBehaviour extends MockBehaviour {
  /** The reply's text (streamed a word an event). Default: "Hello from Bedrock". */
  text?: string;
  /** A stream waits this long after each event. */
  chunkDelayMs?: number;
}

export interface MockBedrockRequest {
  method: string;
  path: string;
  modelId: string;
  action: 'converse' | 'converse-stream' | 'invoke' | '';
  /** The access key id its signature names. */
  accessKeyId: string | undefined;
  body: Record<string, unknown>;
  at: number;
}

export type MockBedrockUpstream = MockUpstream<MockBedrockBehaviour, MockBedrockRequest> & { key: MockAwsKey; region: string };

const ROUTE = /^\/model\/([^/]+)\/(converse|converse-stream|invoke)$/;
const utf8 = new TextDecoder();
const codec = new EventStreamCodec((bytes) => utf8.decode(bytes), (text) => new TextEncoder().encode(text));

/** The credential JSON a `bedrock` channel takes for `key` in `region`. */
export const bedrockCredentialOf = (key: MockAwsKey, region: string) =>
  JSON.stringify({ access_key_id: key.accessKeyId, secret_access_key: key.secretAccessKey, region, ...(key.sessionToken ? { session_token: key.sessionToken } : {}) });

export async function startMockBedrockUpstream(options: MockBedrockOptions = {}, initial: MockBedrockBehaviour = {}): Promise<MockBedrockUpstream> {
  const keys = options.keys ?? [MOCK_AWS_KEY];
  const region = options.region ?? MOCK_AWS_REGION;
  const mock = await startMockUpstream(bedrockWireFormat(keys, region, options.models, options.clockAheadMs ?? 0), initial);
  return Object.assign(mock, { key: keys[0]!, region });
}

function bedrockWireFormat(keys: MockAwsKey[], region: string, models: string[] | undefined, clockAheadMs: number): MockWireFormat<MockBedrockBehaviour, MockBedrockRequest> {
  const routeOf = (r: ReceivedRequest) => {
    const route = ROUTE.exec(new URL(r.path, 'http://mock').pathname);
    return { modelId: route ? decodeURIComponent(route[1]!) : '', action: (route?.[2] ?? '') as MockBedrockRequest['action'] };
  };
  return {
    name: 'mock Bedrock upstream',
    record: (r) => ({ method: r.method, path: r.path, ...routeOf(r), accessKeyId: /Credential=([^/]+)/.exec(String(r.headers.authorization ?? ''))?.[1], body: r.json ?? {}, at: r.at }),
    headers: () => ({ 'x-amzn-requestid': crypto.randomUUID() }),
    invalidJson: () => ({ message: 'Malformed input request, please reformat your input and try again.' }),
    async check(r) {
      const refusal = await awsSignatureRefusal(r, keys, region, 'bedrock', Date.now() + clockAheadMs);
      if (refusal) return { status: 403, body: { message: refusal.message } };
      const { modelId, action } = routeOf(r);
      if (r.method !== 'POST' || !action) return { status: 404, body: { message: 'Not Found' } };
      if (models && !models.includes(modelId)) return { status: 400, body: { message: 'The provided model identifier is invalid.' } };
      return undefined;
    },
    failureBody: (status) => ({ message: status === 429 ? 'Too many requests, please wait before trying again.' : `mock failure ${status}` }),
    overLimitBody: () => ({ message: 'Too many requests, please wait before trying again.' }),
    answer: (exchange, b) => answer(exchange, routeOf(exchange.request), b),
  };
}

const words = (text: string) => text.split(/\s+/).filter(Boolean);
const tokens = (text: string) => Math.max(1, Math.ceil(text.length / 4));

/** The last user text of a Converse request, and whether it offers tools. */
function promptOf(body: Record<string, unknown>): { text: string; tools: boolean } {
  const messages = (body.messages ?? []) as { role: string; content: { text?: string }[] }[];
  const last = [...messages].reverse().find((m) => m.role === 'user');
  const text = (last?.content ?? []).map((block) => block.text ?? '').join(' ');
  return { text, tools: Array.isArray((body.toolConfig as { tools?: unknown } | undefined)?.tools) };
}

async function answer({ res, request, gone }: MockExchange, route: { modelId: string; action: string }, b: MockBedrockBehaviour): Promise<void> {
  const body = request.json ?? {};
  if (route.action === 'invoke') return embed(res, body);
  const prompt = promptOf(body);
  const weather = prompt.tools && /weather/i.test(prompt.text);
  const text = b.text ?? 'Hello from Bedrock';
  const usage = { inputTokens: tokens(JSON.stringify(body.messages ?? [])), outputTokens: weather ? 12 : words(text).length, totalTokens: 0 };
  usage.totalTokens = usage.inputTokens + usage.outputTokens;
  const toolUse = { toolUseId: 'tooluse_mock_1', name: 'get_weather', input: { city: 'Paris' } };
  if (route.action === 'converse') {
    const content = weather ? [{ toolUse }] : [{ text }];
    const reply = { output: { message: { role: 'assistant', content } }, stopReason: weather ? 'tool_use' : 'end_turn', usage, metrics: { latencyMs: 1 } };
    return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(reply));
  }
  const events: [string, unknown][] = [['messageStart', { role: 'assistant' }]];
  if (weather) {
    const args = JSON.stringify(toolUse.input);
    events.push(['contentBlockStart', { contentBlockIndex: 0, start: { toolUse: { toolUseId: toolUse.toolUseId, name: toolUse.name } } }]);
    for (const piece of [args.slice(0, 5), args.slice(5)]) events.push(['contentBlockDelta', { contentBlockIndex: 0, delta: { toolUse: { input: piece } } }]);
  } else {
    for (const [i, word] of words(text).entries()) events.push(['contentBlockDelta', { contentBlockIndex: 0, delta: { text: i === 0 ? word : ` ${word}` } }]);
  }
  events.push(['contentBlockStop', { contentBlockIndex: 0 }], ['messageStop', { stopReason: weather ? 'tool_use' : 'end_turn' }], ['metadata', { usage, metrics: { latencyMs: 1 } }]);
  res.writeHead(200, { 'content-type': 'application/vnd.amazon.eventstream' });
  for (const [type, payload] of events) {
    if (gone.aborted) return;
    res.write(codec.encode({
      headers: { ':message-type': { type: 'string', value: 'event' }, ':event-type': { type: 'string', value: type }, ':content-type': { type: 'string', value: 'application/json' } },
      body: new TextEncoder().encode(JSON.stringify(payload)),
    }));
    if (b.chunkDelayMs) await sleepUnlessGone(b.chunkDelayMs, gone);
  }
  res.end();
}

/** A vector of 8 floats from the text's hash: the same text, the same vector. */
const vectorOf = (text: string) => Array.from(createHash('sha256').update(text).digest().subarray(0, 8), (byte) => (byte - 127.5) / 127.5);

function embed(res: MockExchange['res'], body: Record<string, unknown>): void {
  const reply = (status: number, value: unknown) => void res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(value));
  if (typeof body.inputText === 'string') return reply(200, { embedding: vectorOf(body.inputText), inputTextTokenCount: tokens(body.inputText) });
  if (Array.isArray(body.texts) && body.texts.every((t) => typeof t === 'string') && typeof body.input_type === 'string') {
    return reply(200, { id: crypto.randomUUID(), embeddings: (body.texts as string[]).map(vectorOf), texts: body.texts, response_type: 'embeddings_floats' });
  }
  return reply(400, { message: 'Malformed input request: neither inputText (Titan) nor texts with input_type (Cohere)' });
}
