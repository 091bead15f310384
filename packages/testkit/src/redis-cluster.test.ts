import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Cluster } from 'ioredis';
import { spawnRedisCluster, type TestRedisCluster } from './redis-cluster.ts';

let cluster: TestRedisCluster;
let client: Cluster;

beforeAll(async () => {
  cluster = await spawnRedisCluster();
  client = new Cluster(cluster.seeds.split(',').map((address) => ({ host: '127.0.0.1', port: Number(address.split(':')[1]) })));
}, 60_000);
afterAll(async () => {
  client?.disconnect();
  await cluster?.close();
});

describe('the test kit\'s Redis Cluster', () => {
  it('is three masters with a replica each, on ports whose bus port is free, sharing the keys between them', async () => {
    expect(cluster.nodes).toHaveLength(6);
    expect(cluster.nodes.every((n) => n.port < 55_535)).toBe(true);
    expect(await cluster.masters()).toHaveLength(3);
    await Promise.all(Array.from({ length: 300 }, (_, i) => client.set(`k${i}`, String(i))));
    const sizes = await Promise.all(client.nodes('master').map((node) => node.dbsize()));
    expect(sizes.reduce((a, b) => a + b, 0)).toBe(300);
    expect(sizes.every((size) => size > 50)).toBe(true);
  });

  it('survives kill -9 of a master: its replica takes over, with the writes it had replicated', async () => {
    // Replication is asynchronous: a write is safe from a master's crash once WAIT saw a replica take it.
    const replicated = await Promise.all(client.nodes('master').map((node) => node.call('WAIT', 1, 5000)));
    expect(replicated).toEqual([1, 1, 1]);
    const [victim] = await cluster.masters();
    const before = await cluster.masters();
    await cluster.kill(victim!);
    // Detection takes the node timeout (5 s); an election that fails under a loaded machine is
    // retried only after twice the failover timeout (20 s): three more tries must fit (a CI run
    // with two test files at once saw a node still in cluster_state:fail after 60 s, once).
    await cluster.waitUntilHealthy(90_000);
    const after = await cluster.masters();
    expect(after).toHaveLength(3);
    expect(after.map((n) => n.port)).not.toContain(victim!.port);
    expect(after.filter((n) => !before.some((b) => b.port === n.port))).toHaveLength(1);
    const values = await Promise.all(Array.from({ length: 300 }, (_, i) => client.get(`k${i}`)));
    expect(values).toEqual(Array.from({ length: 300 }, (_, i) => String(i)));
  }, 150_000);
});
