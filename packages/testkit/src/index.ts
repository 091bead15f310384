/**
 * @gateway/testkit owns what the tests stand on: a real Redis (spawned, or from REDIS_URL, or a
 * container), the services started as real processes, and mock upstreams that speak the
 * providers' wire formats over real HTTP.
 */
export { spawnPostgres, type TestPostgres } from './postgres-harness.ts';
export { spawnRedis, useTestRedis, useTestStore, hasRedisServer, type TestRedis, type TestStore } from './redis-harness.ts';
export { spawnRedisCluster, type TestRedisCluster, type ClusterNode } from './redis-cluster.ts';
export { gatewayLogsCaughtUp, startService, repoRoot, TEST_SECRET_KEY, type ServiceName, type ServiceProcess } from './service-process.ts';
export { startStack, type Stack, type StackOptions } from './stack.ts';
export { startMockUpstream, sleepUnlessGone, writeOrWait, type MockUpstream, type MockBehaviour, type MockWireFormat, type MockExchange, type ReceivedRequest } from './mock-upstream.ts';
export { startMockOpenAIUpstream, type MockOpenAIUpstream, type MockOpenAIBehaviour, type RecordedRequest } from './mock-openai-upstream.ts';
export { startMockBedrockUpstream, bedrockCredentialOf, MOCK_AWS_KEY, MOCK_AWS_REGION, type MockBedrockUpstream, type MockBedrockOptions, type MockBedrockBehaviour, type MockBedrockRequest } from './mock-bedrock-upstream.ts';
export { BEDROCK_THOUGHT } from './mock-bedrock-reply.ts';
export type { MockAwsKey } from './mock-aws-signature.ts';
export { startMockVertexUpstream, MOCK_VERTEX_PROJECT, MOCK_VERTEX_REGION, type MockVertexUpstream, type MockVertexOptions, type MockVertexBehaviour, type MockVertexRequest } from './mock-vertex-upstream.ts';
export { MockGoogleOAuth, newServiceAccount, type MockServiceAccount, type IssuedToken } from './mock-google-oauth.ts';
export { MockEntraId, newServicePrincipal, type MockServicePrincipal, type IssuedEntraToken } from './mock-entra-id.ts';
export { startMockAzureUpstream, MOCK_AZURE_API_KEY, MOCK_AZURE_API_VERSIONS, type MockAzureUpstream, type MockAzureOptions, type MockAzureRequest } from './mock-azure-upstream.ts';
export {
  startMockAnthropicUpstream,
  type MockAnthropicUpstream,
  type MockAnthropicBehaviour,
  type MockAnthropicRequest,
} from './mock-anthropic-upstream.ts';
export type { MockToolUse } from './mock-anthropic-reply.ts';
export { THOUGHT as ANTHROPIC_THOUGHT } from './mock-anthropic-reply.ts';
export {
  startMockGeminiUpstream,
  mockSpeech,
  sinePcm,
  MOCK_GEMINI_API_KEY,
  type MockGeminiUpstream,
  type MockGeminiOptions,
  type MockGeminiBehaviour,
  type MockGeminiFailure,
  type MockGeminiRequest,
  type MockGeminiStats,
  type MockSpeech,
} from './mock-gemini-upstream.ts';
export { MOCK_THOUGHT, sampleOf, type MockGeminiTextBehaviour } from './mock-gemini-text.ts';
export { twoSpeakers } from './speech-samples.ts';
export { findChromium, CHROMIUM_ARGS, type FoundChromium } from './chromium.ts';
export { postJson, caught, type HttpAnswer } from './http-client.ts';
export { clientAt, type AddressedClient } from './client-address.ts';
export { startBodyFlood, type Flood, type FloodAnswer } from './body-flood.ts';
export { startOtlpReceiver, OTLP_KIND, OTLP_STATUS, type OtlpReceiver, type ReceivedSpan } from './otlp-receiver.ts';
