/**
 * For the gateway's in-process tests: the real gateway (`buildGateway`) over a test Redis, ready
 * for `app.inject`, with one user and an unlimited API key. Registers its own vitest hooks.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { createLogger } from '@gateway/log';
import { createGatewayMetrics } from '@gateway/observability';
import { createRedis, JobClient, ReplyInbox, type Redis } from '@gateway/queue';
import { ChannelKeyCipher, createStore, issueApiKey, type Store } from '@gateway/store';
import { TEST_SECRET_KEY, useTestRedis, type TestRedis } from '@gateway/testkit';
import { buildGateway } from '../src/app.ts';

export interface TestGateway {
  server: TestRedis;
  redis: Redis;
  store: Store;
  app: FastifyInstance;
  /** An API key of an unlimited key of group `default`. */
  key: string;
}

/** `unreadBodyBytesPerSecond`: how fast bodies answered unread are dropped (64 MiB a second unless set). */
export function useTestGateway(options: { unreadBodyBytesPerSecond?: number } = {}): TestGateway {
  const gateway = {} as TestGateway;
  let inbox: ReplyInbox;
  let jobs: JobClient;
  beforeAll(async () => {
    const server = await useTestRedis();
    const redis = createRedis(server.url, { name: 'gateway-in-process' });
    const store = createStore(redis);
    inbox = new ReplyInbox(randomUUID(), createRedis(server.url, { name: 'gateway-in-process-replies', blocking: true }), redis);
    inbox.start();
    jobs = new JobClient(redis, inbox, { shards: 1 });
    const { app } = buildGateway({
      redis, store, jobs, inbox, metrics: createGatewayMetrics(), log: createLogger('gateway', 'silent'),
      requestTimeoutMs: 5000, bodyLimitBytes: 1024 * 1024, managementBodyLimitBytes: 64 * 1024, managementChangesPerMinute: 60,
      headersTimeoutMs: 5000, bodyTimeoutMs: 5000, keepAliveTimeoutMs: 5000, clientStallTimeoutMs: 5000, responseBufferBytes: 1024 * 1024, unreadBodyBytesPerSecond: options.unreadBodyBytesPerSecond ?? 64 * 1024 * 1024, bodyBudget: { perKeyBytes: 32 * 1024 * 1024, perUserBytes: 2 * 32 * 1024 * 1024, totalBytes: 256 * 1024 * 1024, defaultBodyLimit: 1024 * 1024 },
      cipher: new ChannelKeyCipher(Buffer.from(TEST_SECRET_KEY, 'base64')),
      loginThrottle: { failuresPerUser: 5, failuresPerAddress: 20, failuresPerUserOverall: 100, windowSeconds: 60 },
      passwordHashConcurrency: 1, addressPolicy: { allowPrivate: true, forbidden: [] }, dashboardPayloads: 'none', maxBacklog: 1000,
      files: { maxBytes: 1024 * 1024, maxLines: 1000, userMaxBytes: 1024 * 1024 * 1024, userMaxFiles: 1000 }, batchCompletionWindowMs: 60_000, batchUserMaxOpen: 100,
    });
    await app.ready();
    const user = await store.users.create({ username: 'in-process', password_hash: 'x', group: 'default' });
    const { key, issued } = issueApiKey();
    await store.tokens.create({ user_id: user.id, name: 'in-process', unlimited_quota: true }, issued);
    Object.assign(gateway, { server, redis, store, app, key });
  });
  afterAll(async () => {
    await gateway.app.close();
    await inbox.stop();
    await jobs.close();
    gateway.redis.disconnect();
    await gateway.server.close();
  });
  return gateway;
}
