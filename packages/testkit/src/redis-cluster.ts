import { setTimeout as sleep } from 'node:timers/promises';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { freePort } from '@gateway/local-stack';
import { LEASH, waitUntilAnswering } from './redis-harness.ts';

/** A cluster node's bus port is its port + 10000, so a node's port must stay below this. */
const MAX_NODE_PORT = 55_535;

export interface ClusterNode {
  port: number;
  /** `127.0.0.1:<port>` */
  address: string;
}

export interface TestRedisCluster {
  /** Every node, as `host:port`, the value for REDIS_CLUSTER_NODES. */
  seeds: string;
  nodes: ClusterNode[];
  /** The nodes that are masters now (after a failover, a promoted replica is one). */
  masters(): Promise<ClusterNode[]>;
  /** The master serving the slot of `key` now. */
  masterFor(key: string): Promise<ClusterNode>;
  /** The redis-server process id of a node (for CPU figures). */
  pidOf(node: ClusterNode): number;
  /** Kills a node with SIGKILL (a crash); its replica takes over after the node timeout. */
  kill(node: ClusterNode): Promise<void>;
  /**
   * Resolves once every live node reports `cluster_state:ok`, the masters serve every slot, and
   * every replica is in sync with its master (a replica that never synced cannot take over).
   */
  waitUntilHealthy(timeoutMs?: number): Promise<void>;
  /** Stops every node and removes their data. */
  close(): Promise<void>;
}

/** Whether nothing listens on `port` now. */
function isFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** A free port below MAX_NODE_PORT whose bus port (+10000) is free too. */
async function freeNodePort(taken: Set<number>): Promise<number> {
  for (let i = 0; i < 200; i++) {
    const port = await freePort();
    if (port >= MAX_NODE_PORT || taken.has(port) || taken.has(port + 10_000)) continue;
    if (await isFree(port + 10_000)) return port;
  }
  throw new Error(`no free port below ${MAX_NODE_PORT} with a free cluster bus port`);
}

/**
 * A real Redis Cluster for tests: `masters` masters with `replicas` replicas each, every node a
 * private redis-server on loopback with AOF (so a promoted replica has every acknowledged write
 * the master had replicated), joined with `redis-cli --cluster create`. Nodes are leashed like
 * `spawnRedis`: they die with the test process. The node timeout (5 s) is long enough that a
 * node starved of CPU by a busy test run is not taken for dead, and a failover takes 6-8 s.
 */
export async function spawnRedisCluster({ masters = 3, replicas = 1, nodeTimeoutMs = 5000 } = {}): Promise<TestRedisCluster> {
  if (spawnSync('redis-cli', ['--version'], { stdio: 'ignore' }).status !== 0) {
    throw new Error('a Redis Cluster for tests needs redis-cli beside redis-server (apt-get install -y redis-server)');
  }
  const dir = mkdtempSync(join(tmpdir(), 'gw-cluster-'));
  const taken = new Set<number>();
  const nodes: ClusterNode[] = [];
  const children = new Map<number, { child: ChildProcess; pid: number }>();
  for (let i = 0; i < masters * (1 + replicas); i++) {
    const port = await freeNodePort(taken);
    taken.add(port);
    taken.add(port + 10_000);
    nodes.push({ port, address: `127.0.0.1:${port}` });
  }
  const close = async () => {
    await Promise.all([...children.values()].map(({ child, pid }) => stopNode(child, pid)));
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    for (const node of nodes) {
      const nodeDir = join(dir, String(node.port));
      mkdirSync(nodeDir);
      const args = ['--port', String(node.port), '--bind', '127.0.0.1', '--dir', nodeDir, '--protected-mode', 'no',
        '--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf', '--cluster-node-timeout', String(nodeTimeoutMs),
        '--appendonly', 'yes', '--appendfsync', 'everysec', '--save', '', '--maxmemory-policy', 'noeviction',
        // A replica syncs at once rather than after the default 5 s wait for more replicas.
        '--repl-diskless-sync-delay', '0'];
      const child = spawn('sh', ['-c', LEASH, 'redis-server', ...args], { stdio: ['pipe', 'ignore', 'ignore'] });
      children.set(node.port, { child, pid: 0 });
    }
    for (const node of nodes) {
      await waitUntilAnswering(`redis://${node.address}`);
      const probe = new Redis(node.port, '127.0.0.1');
      children.get(node.port)!.pid = Number(/process_id:(\d+)/.exec(await probe.info('server'))?.[1]);
      probe.disconnect();
    }
    const created = spawnSync('redis-cli', ['--cluster', 'create', ...nodes.map((n) => n.address), '--cluster-replicas', String(replicas), '--cluster-yes'], { encoding: 'utf8' });
    if (created.status !== 0) throw new Error(`redis-cli --cluster create failed:\n${created.stdout}\n${created.stderr}`);
  } catch (error) {
    await close();
    throw error;
  }

  const live = () => nodes.filter((n) => children.get(n.port)?.child.exitCode === null);
  const cluster: TestRedisCluster = {
    seeds: nodes.map((n) => n.address).join(','),
    nodes,
    async masters() {
      const [node] = live();
      const probe = new Redis(node!.port, '127.0.0.1');
      try {
        const ports = servingMasters((await probe.call('CLUSTER', 'NODES')) as string);
        return nodes.filter((n) => ports.includes(n.port));
      } finally {
        probe.disconnect();
      }
    },
    async masterFor(key) {
      const [node] = live();
      const probe = new Redis(node!.port, '127.0.0.1');
      try {
        const slot = Number(await probe.call('CLUSTER', 'KEYSLOT', key));
        const text = (await probe.call('CLUSTER', 'NODES')) as string;
        for (const line of text.trim().split('\n')) {
          const fields = line.trim().split(' ');
          if (!fields[2]?.split(',').includes('master') || fields[2].includes('fail')) continue;
          const serves = fields.slice(8).some((range) => {
            const [from, to = from] = range.split('-').map(Number);
            return slot >= from! && slot <= to!;
          });
          const port = Number(/:(\d+)@/.exec(fields[1] ?? '')?.[1]);
          if (serves) return nodes.find((n) => n.port === port)!;
        }
        throw new Error(`no master serves the slot of ${key}`);
      } finally {
        probe.disconnect();
      }
    },
    pidOf: (node) => children.get(node.port)!.pid,
    async kill(node) {
      const entry = children.get(node.port);
      if (entry) await stopNode(entry.child, entry.pid, 'SIGKILL');
    },
    async waitUntilHealthy(timeoutMs = 20_000) {
      const started = Date.now();
      for (;;) {
        const unhealthy = await whyUnhealthy(live(), masters);
        if (unhealthy === undefined) return;
        if (Date.now() - started > timeoutMs) throw new Error(`the cluster was not healthy within ${timeoutMs} ms: ${unhealthy}`);
        await sleep(100);
      }
    },
    close,
  };
  await cluster.waitUntilHealthy();
  return cluster;
}

async function stopNode(child: ChildProcess, pid: number, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  try {
    if (pid) process.kill(pid, signal);
    else child.kill(signal);
  } catch {
    /* already gone */
  }
  await exited;
  child.stdin?.destroy();
}

/**
 * Why the cluster is not healthy yet, or undefined once every live node says cluster_state:ok,
 * as many masters as expected serve slots, and every replica's link to its master is up.
 */
async function whyUnhealthy(nodes: ClusterNode[], masters: number): Promise<string | undefined> {
  for (const node of nodes) {
    const probe = new Redis(node.port, '127.0.0.1', { maxRetriesPerRequest: 0, retryStrategy: () => null, lazyConnect: true });
    probe.on('error', () => {});
    try {
      await probe.connect();
      const info = (await probe.call('CLUSTER', 'INFO')) as string;
      if (!/cluster_state:ok/.test(info)) return `${node.address} says ${/cluster_state:\w+/.exec(info)?.[0] ?? 'no cluster_state'}`;
      const serving = servingMasters((await probe.call('CLUSTER', 'NODES')) as string);
      if (serving.length < masters) return `${node.address} sees ${serving.length} of ${masters} masters serving`;
      const replication = await probe.info('replication');
      if (/role:slave/.test(replication) && !/master_link_status:up/.test(replication)) return `${node.address} is a replica whose link to its master is down`;
    } catch (error) {
      return `${node.address} did not answer (${(error as Error).message})`;
    } finally {
      probe.disconnect();
    }
  }
  return undefined;
}

/**
 * Ports of the masters that serve slots and are not failing, from CLUSTER NODES (a line:
 * id, address@bus, flags, master id, ping, pong, epoch, link state, slot ranges…).
 */
function servingMasters(clusterNodes: string): number[] {
  const ports: number[] = [];
  for (const line of clusterNodes.trim().split('\n')) {
    const fields = line.trim().split(' ');
    const flags = (fields[2] ?? '').split(',');
    if (!flags.includes('master') || flags.includes('fail') || flags.includes('fail?')) continue;
    if (fields[7] !== 'connected' || fields.length <= 8) continue;
    ports.push(Number(/:(\d+)@/.exec(fields[1] ?? '')?.[1]));
  }
  return ports;
}
