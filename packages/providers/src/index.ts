/**
 * @gateway/providers owns the calls to upstream model providers, one folder per provider
 * (`api.ts`: where and how to call; `complete.ts`: request and reply mapping; `index.ts`: what
 * it offers), over one shared keep-alive HTTP client. Every failure is an `UpstreamError` (a contract, in @gateway/contracts), so
 * the router can decide on failover without knowing the provider.
 */
export { openUpstreamStream, postUpstreamJson, upstreamLimits, setUpstreamLimits, setAddressPolicy, HOP_HEADER, type UpstreamRequest, type OpenUpstreamReply } from './upstream-request.ts';
export { readServerSentEvents } from './server-sent-events.ts';
export * as openai from './openai/index.ts';
export * as gemini from './gemini/index.ts';
export { baseUrlProblem, addressProblem, ownAddresses, redisAddresses, type AddressPolicy } from './upstream-address-policy.ts';
