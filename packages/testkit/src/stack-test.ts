/**
 * The end-to-end suites' shared set-up as vitest fixtures (`test.extend`): a stack of real
 * processes per test file, mock upstreams closed after each test, and the channels and API keys
 * a test makes on the stack. Imported from `@gateway/testkit/fixtures`.
 *
 *   const test = stackTest({ workers: ['completion-worker'], channelDefaults: { timeout_ms: 3000 } });
 *   test('…', async ({ stack, upstream, channel, apiKey }) => {
 *     const mock = await upstream.openai();
 *     await channel(mock, ['m']);
 *     const { key } = await apiKey();
 *   });
 */
import { expect, test as base } from 'vitest';
import { startMockAnthropicUpstream, type MockAnthropicBehaviour, type MockAnthropicUpstream } from './mock-anthropic-upstream.ts';
import { bedrockCredentialOf, startMockBedrockUpstream, type MockBedrockBehaviour, type MockBedrockOptions, type MockBedrockUpstream } from './mock-bedrock-upstream.ts';
import { startMockAzureUpstream, type MockAzureOptions, type MockAzureUpstream } from './mock-azure-upstream.ts';
import { startMockVertexUpstream, type MockVertexBehaviour, type MockVertexOptions, type MockVertexUpstream } from './mock-vertex-upstream.ts';
import { startMockGeminiUpstream, type MockGeminiOptions, type MockGeminiUpstream } from './mock-gemini-upstream.ts';
import { startMockOpenAIUpstream, type MockOpenAIBehaviour, type MockOpenAIUpstream } from './mock-openai-upstream.ts';
import { spawnRedisCluster, type TestRedisCluster } from './redis-cluster.ts';
import { startStack, type Stack, type StackOptions } from './stack.ts';

export interface StackTestOptions extends Omit<StackOptions, 'cluster'> {
  /** Fields every channel made with `channel()` has unless the test sets them (`timeout_ms`, say). */
  channelDefaults?: Record<string, unknown>;
  /** Run the stack on a Redis Cluster of its own (3 masters, 3 replicas): the `cluster` fixture. */
  redisCluster?: boolean;
  /** How long the file's set-up (the cluster, the stack) may take; the hook time-out by default. */
  startTimeoutMs?: number;
}

/** Mock upstreams for one test; each is closed when the test ends. */
export interface Upstreams {
  openai(behaviour?: MockOpenAIBehaviour): Promise<MockOpenAIUpstream>;
  gemini(options?: MockGeminiOptions): Promise<MockGeminiUpstream>;
  anthropic(behaviour?: MockAnthropicBehaviour): Promise<MockAnthropicUpstream>;
  azure(options?: MockAzureOptions, behaviour?: MockOpenAIBehaviour): Promise<MockAzureUpstream>;
  bedrock(options?: MockBedrockOptions, behaviour?: MockBedrockBehaviour): Promise<MockBedrockUpstream>;
  vertex(options?: MockVertexOptions, behaviour?: MockVertexBehaviour): Promise<MockVertexUpstream>;
}

/**
 * Makes a channel on the stack for `models`, pointing at `mock`: a gemini channel with the
 * mock's key for a Gemini mock, an azure (bedrock) channel with the mock's key (AWS credential)
 * for an Azure (Bedrock) mock, a vertex channel with its service account's JSON key for a Vertex
 * mock, an
 * anthropic channel for an Anthropic mock, else an openai
 * channel; each but gemini with a key of its own (`sk-upstream-<n>` unless `fields.key` says). Returns the channel as the management API shows it.
 */
export type MakeChannel = (mock: MockOpenAIUpstream | MockGeminiUpstream | MockAnthropicUpstream | MockAzureUpstream | MockBedrockUpstream | MockVertexUpstream, models: string[], fields?: Record<string, unknown>) => Promise<any>;

/** Makes an API key as root, with unlimited quota unless `fields` say otherwise; returns its id and full key. */
export type MakeApiKey = (fields?: Record<string, unknown>) => Promise<{ id: number; key: string }>;

let made = 0;
/** The Anthropic, Azure, Bedrock and Vertex mocks started here: their channels are of those types. */
const anthropicMocks = new WeakSet<object>();
const vertexMocks = new WeakSet<object>();
const azureMocks = new WeakSet<object>();
const bedrockMocks = new WeakSet<object>();

/**
 * A `test` whose fixtures stand on one stack per file, started with `options` before the file's
 * first test (under the hook time-out, not a test's) and stopped after its last.
 */
export function stackTest(options: StackTestOptions = {}) {
  const { channelDefaults = {}, redisCluster = false, startTimeoutMs, ...stackOptions } = options;
  const test = base
    .extend('cluster', { scope: 'file' }, async ({}, { onCleanup }): Promise<TestRedisCluster | undefined> => {
      if (!redisCluster) return undefined;
      const cluster = await spawnRedisCluster();
      onCleanup(() => cluster.close());
      return cluster;
    })
    .extend('stack', { scope: 'file' }, async ({ cluster }, { onCleanup }) => {
      const stack = await startStack({ ...stackOptions, cluster });
      onCleanup(() => stack.stop());
      return stack;
    })
    .extend('upstream', async ({}, { onCleanup }): Promise<Upstreams> => {
      const mocks: { close(): Promise<void> }[] = [];
      onCleanup(async () => void (await Promise.all(mocks.map((m) => m.close()))));
      const started = async <T extends { close(): Promise<void> }>(mock: Promise<T>) => {
        mocks.push(await mock);
        return mock;
      };
      return {
        openai: (behaviour) => started(startMockOpenAIUpstream(behaviour)),
        gemini: (mockOptions) => started(startMockGeminiUpstream(mockOptions)),
        anthropic: async (behaviour) => {
          const mock = await started(startMockAnthropicUpstream(behaviour));
          anthropicMocks.add(mock);
          return mock;
        },
        azure: async (azureOptions, behaviour) => {
          const mock = await started(startMockAzureUpstream(azureOptions, behaviour));
          azureMocks.add(mock);
          return mock;
        },
        bedrock: async (bedrockOptions, behaviour) => {
          const mock = await started(startMockBedrockUpstream(bedrockOptions, behaviour));
          bedrockMocks.add(mock);
          return mock;
        },
        vertex: async (vertexOptions, behaviour) => {
          const mock = await started(startMockVertexUpstream(vertexOptions, behaviour));
          vertexMocks.add(mock);
          return mock;
        },
      };
    })
    .extend('channel', async ({ stack }): Promise<MakeChannel> => async (mock, models, fields = {}) => {
      const n = ++made;
      const identity = vertexMocks.has(mock)
        ? { name: `vertex-${n}`, type: 'vertex', key: (mock as MockVertexUpstream).credential() }
        : bedrockMocks.has(mock)
        ? { name: `bedrock-${n}`, type: 'bedrock', key: bedrockCredentialOf((mock as MockBedrockUpstream).key, (mock as MockBedrockUpstream).region) }
        : azureMocks.has(mock)
        ? { name: `azure-${n}`, type: 'azure', key: (mock as MockAzureUpstream).apiKey }
        : 'apiKey' in mock
        ? { name: `gemini-${n}`, type: 'gemini', key: mock.apiKey }
        : anthropicMocks.has(mock)
          ? { name: `anthropic-${n}`, type: 'anthropic', key: `sk-ant-upstream-${n}` }
          : { name: `ch-${n}`, type: 'openai', key: `sk-upstream-${n}` };
      return stack.adminData('POST', '/api/channel/', { ...identity, base_url: mock.url, models, ...channelDefaults, ...fields });
    })
    .extend('apiKey', async ({ stack }): Promise<MakeApiKey> => async (fields = {}) => {
      const { id, key } = await stack.adminData('POST', '/api/token/', { name: `key-${++made}`, unlimited_quota: true, ...fields });
      return { id, key };
    });
  // Started in a hook so that its start-up counts against the hook time-out, not the first test's.
  test.beforeAll(async ({ stack }) => void stack, startTimeoutMs);
  return test;
}

/** The request log's row of a request (`GET /api/log/?request_id=`), once written. */
export async function loggedRow(stack: Stack, requestId: string, timeoutMs = 20_000): Promise<any> {
  let row: any;
  await expect.poll(async () => {
    row = (await stack.admin('GET', `/api/log/?request_id=${requestId}`)).body.data?.items?.[0];
    return row !== undefined;
  }, { timeout: timeoutMs, interval: 250 }).toBe(true);
  return row;
}
