import type { TestRedisCluster } from './redis-cluster.ts';
import { useTestRedis, type TestRedis } from './redis-harness.ts';
import { startService, type ServiceName, type ServiceProcess } from './service-process.ts';
import { spawnPostgres, type TestPostgres } from './postgres-harness.ts';

export interface Stack {
  redis: TestRedis;
  /** The stack's PostgreSQL (DATABASE_URL of every service), when asked for with `database`. */
  postgres?: TestPostgres;
  gateway: ServiceProcess;
  services: ServiceProcess[];
  adminToken: string;
  env: Record<string, string>;
  /** Calls the management API as root (or with `token`), returning status and parsed body. */
  admin(method: string, path: string, body?: unknown, token?: string): Promise<{ status: number; body: any; headers: Headers }>;
  /** Like `admin`, for set-up that must work: throws unless the answer is 200, and returns its `data`. */
  adminData(method: string, path: string, body?: unknown, token?: string): Promise<any>;
  /** Starts one more service process against the same Redis. */
  add(name: ServiceName, env?: Record<string, string>): Promise<ServiceProcess>;
  stop(): Promise<void>;
}

export interface StackOptions {
  /** Workers to start besides the gateway; the admin worker is always started. */
  workers?: ServiceName[];
  env?: Record<string, string>;
  /**
   * Run on this Redis Cluster (REDIS_CLUSTER_NODES, no REDIS_URL at all) instead of a Redis of
   * the stack's own. The test owns the cluster; `stack.redis.url` then names its first node.
   */
  cluster?: TestRedisCluster;
  /** Start a PostgreSQL of the stack's own (the Files and Batch APIs, and the batch worker, need it). */
  database?: boolean;
}

/** A cluster as the stack's `redis`: its first node's URL; stopping it is the test's business. */
function clusterAsTestRedis(cluster: TestRedisCluster): TestRedis {
  const refuse = async () => {
    throw new Error('stop or restart a cluster node through the cluster (kill), not the stack');
  };
  return { url: `redis://${cluster.nodes[0]!.address}`, stop: refuse, restart: refuse, close: async () => {} };
}

/** Redis, the admin worker, the other workers asked for, and a gateway: all real processes. */
export async function startStack(options: StackOptions = {}): Promise<Stack> {
  // Redis and PostgreSQL side by side, then the workers side by side, then the gateway.
  const [redisStarted, postgresStarted] = await Promise.allSettled([
    options.cluster ? clusterAsTestRedis(options.cluster) : useTestRedis(),
    options.database ? spawnPostgres() : undefined,
  ]);
  if (redisStarted.status === 'rejected' || postgresStarted.status === 'rejected') {
    if (redisStarted.status === 'fulfilled') await redisStarted.value.close();
    if (postgresStarted.status === 'fulfilled') await postgresStarted.value?.close();
    throw redisStarted.status === 'rejected' ? redisStarted.reason : (postgresStarted as PromiseRejectedResult).reason;
  }
  const redis = redisStarted.value;
  const postgres: TestPostgres | undefined = postgresStarted.value;
  const adminToken = 'root-token-for-tests-0123456789';
  const where: Record<string, string> = options.cluster ? { REDIS_CLUSTER_NODES: options.cluster.seeds } : { REDIS_URL: redis.url };
  const services: ServiceProcess[] = [];
  const env: Record<string, string> = { ...where, ADMIN_TOKEN: adminToken, ...options.env, ...(postgres ? { DATABASE_URL: postgres.url } : {}) };
  try {
    const workers = ['admin-worker' as const, ...(options.workers ?? []).filter((w) => w !== 'admin-worker' && w !== 'gateway')];
    const started = await Promise.allSettled(workers.map((w) => startService(w, env)));
    for (const one of started) if (one.status === 'fulfilled') services.push(one.value);
    const failed = started.find((one) => one.status === 'rejected');
    if (failed) throw failed.reason;
    const gateway = await startService('gateway', env);
    services.push(gateway);
    const stack: Stack = {
      redis,
      postgres,
      gateway,
      services,
      adminToken,
      env,
      async admin(method, path, body, token = adminToken) {
        const response = await fetch(stack.gateway.url + path, {
          method,
          headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
          body: body === undefined ? undefined : JSON.stringify(body),
        });
        const text = await response.text();
        let parsed: unknown = text;
        try {
          parsed = JSON.parse(text);
        } catch {
          /* not JSON */
        }
        return { status: response.status, body: parsed, headers: response.headers };
      },
      async adminData(method, path, body, token) {
        const answer = await stack.admin(method, path, body, token);
        if (answer.status !== 200) throw new Error(`${method} ${path} answered ${answer.status}: ${JSON.stringify(answer.body)}`);
        return (answer.body as { data: unknown }).data;
      },
      async add(name, extra = {}) {
        const service = await startService(name, { ...env, ...extra });
        services.push(service);
        return service;
      },
      async stop() {
        await Promise.all(services.map((s) => s.stop('SIGKILL')));
        await redis.close();
        await postgres?.close();
      },
    };
    return stack;
  } catch (error) {
    await Promise.all(services.map((s) => s.stop('SIGKILL')));
    await redis.close();
    await postgres?.close();
    throw error;
  }
}
