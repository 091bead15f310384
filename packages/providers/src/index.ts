/**
 * @gateway/providers owns the calls to upstream model providers, one folder per provider of the
 * same shape (`api.ts`: where and how to call, an endpoint per operation; one file per operation
 * mapping its request and reply; `index.ts`: the operations it offers), all called through one
 * shared piece (`callUpstream`, `streamUpstream`) over one keep-alive HTTP client. Every
 * failure is an `UpstreamError` (a contract, in @gateway/contracts), so the router can decide on
 * failover without knowing the provider. A client wire format that meets several providers (a
 * door: Anthropic's Messages) is a folder under `doors/`, joined to each provider's
 * conversation mapping (`openai/conversation.ts`, `gemini/conversation.ts`) by
 * `throughConversation`.
 */
export { callUpstream, streamUpstream, streamUpstreamAudio, type UpstreamAudio } from './call-upstream.ts';
export type { UpstreamTarget, ProviderOperation } from './provider.ts';
export { openai } from './openai/index.ts';
export { gemini } from './gemini/index.ts';
export { anthropic } from './anthropic/index.ts';
export { azure } from './azure/index.ts';
export { AZURE_API_VERSION } from './azure/credential.ts';
export { bedrock } from './bedrock/index.ts';
export { vertex } from './vertex/index.ts';
export { channelKeyProblem, channelTypesFor, operationFor, operationOn, passesThrough, tokenCounterFor, type OperationShapes } from './registry.ts';
export { setUpstreamLimits, setAddressPolicy, HOP_HEADER } from './upstream-request.ts';
export { baseUrlProblem, addressProblem, clusterNodeAddresses, forbidClusterNodes, ownAddresses, redisAddresses, type AddressPolicy } from './upstream-address-policy.ts';
export { throughConversation, type DoorMapping, type ProviderConversation } from './doors/door.ts';
export { messagesDoor } from './doors/anthropic-messages/index.ts';
export { responsesDoor } from './doors/openai-responses/index.ts';
export { geminiDoor } from './doors/gemini-generate/index.ts';
export { chatDoor } from './doors/openai-chat/index.ts';
export { responseSkeleton, newItemId } from './doors/openai-responses/from-conversation.ts';
