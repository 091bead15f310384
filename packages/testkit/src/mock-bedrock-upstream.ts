/**
 * A Bedrock runtime on a real HTTP port: `POST /model/{modelId}/converse` (a Converse reply),
 * `/converse-stream` (its events in AWS's binary event stream) and `/invoke` for Titan's and
 * Cohere's embedding bodies (`mock-bedrock-reply.ts`). It refuses what AWS refuses before
 * anything else (`mock-aws-signature.ts`): a key it does not know, a signature that does not
 * match, one more than five minutes old (403, `{"message": …}`); then, as a 400
 * ValidationException, a model it does not serve and a Converse body Bedrock would not run
 * (`mock-bedrock-checks.ts`: image and document blocks, replayed reasoning, thinking's budget).
 * What it received is each request's `body`; its behaviours, counters and scripted failures are
 * the shared base's.
 */
import { awsSignatureRefusal, type MockAwsKey } from './mock-aws-signature.ts';
import { converseRefusal } from './mock-bedrock-checks.ts';
import { answerConverse } from './mock-bedrock-reply.ts';
import { startMockUpstream, type MockBehaviour, type MockRefusal, type MockUpstream, type MockWireFormat, type ReceivedRequest } from './mock-upstream.ts';

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

/** A 400 as Bedrock answers a request it will not run: its type in `x-amzn-ErrorType`, its words in the body. */
const validationException = (message: string): MockRefusal => ({
  status: 400,
  body: { message },
  headers: { 'x-amzn-errortype': 'ValidationException:http://internal.amazon.com/coral/com.amazon.bedrock/' },
});

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
      const unsigned = await awsSignatureRefusal(r, keys, region, 'bedrock', Date.now() + clockAheadMs);
      if (unsigned) return { status: 403, body: { message: unsigned.message }, headers: { 'x-amzn-errortype': `${unsigned.type}:http://internal.amazon.com/coral/com.amazon.coral.service/` } };
      const { modelId, action } = routeOf(r);
      if (r.method !== 'POST' || !action) return { status: 404, body: { message: 'Not Found' } };
      if (models && !models.includes(modelId)) return validationException('The provided model identifier is invalid.');
      const refusal = action === 'invoke' ? undefined : converseRefusal(r.json ?? {});
      return refusal ? validationException(refusal) : undefined;
    },
    failureBody: (status) => ({ message: status === 429 ? 'Too many requests, please wait before trying again.' : `mock failure ${status}` }),
    overLimitBody: () => ({ message: 'Too many requests, please wait before trying again.' }),
    answer: (exchange, b) => answerConverse(exchange, routeOf(exchange.request).action, b),
  };
}
