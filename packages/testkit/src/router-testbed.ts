/**
 * For the router's tests: a test Redis, the store on it, a ModelRouter with its own subscriber,
 * and mock upstreams that are closed after each test. Registers its own vitest hooks.
 */
import { afterAll, afterEach, beforeAll } from 'vitest';
import { Redis } from 'ioredis';
import { createLogger } from '@gateway/log';
import { createStore, type Store } from '@gateway/store';
import { ModelRouter, type ModelRequest, type RouteTarget, type Usage } from '@gateway/routing';
import { startMockOpenAIUpstream, type MockOpenAIUpstream } from './mock-openai-upstream.ts';
import { useTestRedis, type TestRedis } from './redis-harness.ts';

export interface RouterTestbed {
  server: TestRedis;
  redis: Redis;
  store: Store;
  router: ModelRouter;
  /** The router's pub/sub connection. */
  subscriber: Redis;
  /** A mock OpenAI upstream, closed when the test ends. */
  upstream(): Promise<MockOpenAIUpstream>;
}

export function useRouterTestbed(settings: { failuresBeforeCooldown: number }): RouterTestbed {
  let mocks: MockOpenAIUpstream[] = [];
  const bed = {
    async upstream() {
      const mock = await startMockOpenAIUpstream();
      mocks.push(mock);
      return mock;
    },
  } as RouterTestbed;
  beforeAll(async () => {
    bed.server = await useTestRedis();
    bed.redis = new Redis(bed.server.url);
    bed.store = createStore(bed.redis);
    bed.subscriber = new Redis(bed.server.url);
    bed.router = await ModelRouter.start({
      redis: bed.redis,
      subscriber: bed.subscriber,
      failuresBeforeCooldown: settings.failuresBeforeCooldown,
      cooldownMs: 60_000,
      authFailuresBeforeDisable: 100,
      log: createLogger('test', 'silent'),
    });
  });
  afterEach(async () => {
    await Promise.all(mocks.map((m) => m.close()));
    mocks = [];
  });
  afterAll(async () => {
    await bed.router.close();
    bed.redis.disconnect();
    await bed.server.close();
  });
  return bed;
}

/**
 * One request through the router's attempts with a whole call, as the workers' relay makes it
 * (packages/worker-runtime/src/model-relay.ts): the router's side of the loop, tested alone.
 */
export async function serveWhole<T>(router: ModelRouter, request: ModelRequest, call: (target: RouteTarget) => Promise<{ value: T; usage: Usage }>): Promise<T> {
  for await (const attempt of router.attempts(request)) {
    let answer: { value: T; usage: Usage };
    try {
      answer = await call(attempt.target);
    } catch (error) {
      await attempt.fail(error);
      continue;
    }
    attempt.succeed(answer.usage);
    return answer.value;
  }
  throw new Error('the router ended its attempts with neither an answer nor an error');
}
