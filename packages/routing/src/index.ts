/**
 * @gateway/routing owns how a model request finds its way upstream, for every provider: which
 * channel serves it (`choose-channel.ts`) and which models a caller may list (`model-catalog.ts`), the in-process channel table (`channel-cache.ts`),
 * failover (`model-router.ts`, `failure-policy.ts`; its shared parts built in `router-parts.ts`), channel health shared across processes
 * (`channel-health.ts`), per-channel concurrency leases shared across processes
 * (`channel-leases.ts`) and the in-process queue of requests waiting for one (`lease-queue.ts`),
 * conversations kept on the channel of their last turn (`conversation-key.ts`, `sticky-choice.ts`, `sticky-channels.ts`),
 * upstream 429s as back-pressure (`back-pressure.ts`), and quota and usage accounting
 * (`usage-ledger.ts`). `ModelRouter.attempts` yields a request's attempts, one channel each, until one succeeds; the
 * worker runtime's relay makes the calls. Its tests' harness is `@gateway/testkit/router`.
 */
export { ModelRouter, type ModelRequest, type ModelRouterOptions, type RouterSettings, type RoutingObserver, type RouteTarget, type RouteAttempt } from './model-router.ts';
export { newRouteRecord, attemptOf, routeRecordIn, type RouteRecord } from './route-record.ts';
export { candidateChannels, channelOrder, pickChannel, upstreamModelFor, servesGroup, type ChannelQuery } from './choose-channel.ts';
export { servedModels, type CatalogQuery, type ServedModel } from './model-catalog.ts';
export { ChannelCache, ChannelSnapshot, type ChannelCacheOptions } from './channel-cache.ts';
export { ChannelHealth, type ChannelHealthOptions, type ChannelFailure, type HealthVerdict } from './channel-health.ts';
export { UsageLedger, type Usage, type Charge } from './usage-ledger.ts';
export { decideOnFailure, exhaustedError, rateLimitedError, type FailureDecision } from './failure-policy.ts';
export { ChannelLeases, type ChannelLeasesOptions, type Lease, type LeaseAttempt } from './channel-leases.ts';
export { LeaseQueue, type ChannelSlot, type LeaseQueueOptions, type LeaseWait } from './lease-queue.ts';
export { backoffMs, RetryAfterWindows } from './back-pressure.ts';
export { routingKeys } from './routing-keys.ts';
export { conversationOf, conversationKey, chatOpening, sessionIdOf, SESSION_HEADERS, type ConversationSource } from './conversation-key.ts';
export { geminiOpening, messagesOpening, openingOfOperation, responsesOpening } from './door-openings.ts';
export { planStickiness, preferFirst, stickyOutcome, type MoveReason, type StickyOutcome, type StickyPlan } from './sticky-choice.ts';
export { StickyChannels, type StickyChannelsOptions } from './sticky-channels.ts';
