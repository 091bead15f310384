/**
 * What an operator asks of the gateway at a glance, read from Redis when asked: each queue (per
 * shard) with its jobs by state, the worker processes serving it and the jobs finished so far;
 * each channel with its requests in flight against its max_concurrency and its state (enabled,
 * cooling down until when, disabled by hand, auto-disabled and why). The metrics endpoint serves
 * it to Prometheus.
 */
import { QueueName, ChannelStatus, type Channel } from '@gateway/contracts';
import { drainedCounterKey, workersOf, type JobClient, type Redis, type WorkerProcess } from '@gateway/queue';
import { routingKeys } from '@gateway/routing';
import type { ChannelStore } from '@gateway/store';

export interface QueueShardState {
  queue: string;
  shard: number;
  waiting: number;
  prioritized: number;
  active: number;
  delayed: number;
}

export interface QueueState {
  queue: string;
  shards: QueueShardState[];
  /** The worker processes serving it (their registry: worker-registry.ts). */
  processes: WorkerProcess[];
  /** Jobs finished (run or dropped) since Redis began counting: its rate is the queue's drain rate. */
  finished: number;
}

export type ChannelCondition = 'enabled' | 'cooling_down' | 'disabled' | 'auto_disabled';

export interface ChannelState {
  id: number;
  name: string;
  type: string;
  tag: string;
  /** Requests holding one of its slots now (only counted for a channel with max_concurrency). */
  in_flight: number;
  max_concurrency: number;
  condition: ChannelCondition;
  /** Epoch ms its cooldown ends, while it cools down. */
  cooling_until?: number;
  status_reason?: string;
}

export class OperationsSnapshot {
  private readonly redis: Redis;
  private readonly jobs: JobClient;
  private readonly channels: ChannelStore;

  constructor(redis: Redis, jobs: JobClient, channels: ChannelStore) {
    this.redis = redis;
    this.jobs = jobs;
    this.channels = channels;
  }

  async queues(): Promise<QueueState[]> {
    return Promise.all(Object.values(QueueName).map(async (queue) => {
      const shards = await Promise.all(this.jobs.shardsOf(queue).map(async (shard, index) => {
        const counts = await shard.getJobCounts('waiting', 'prioritized', 'active', 'delayed');
        return { queue, shard: index, waiting: counts.waiting ?? 0, prioritized: counts.prioritized ?? 0, active: counts.active ?? 0, delayed: counts.delayed ?? 0 };
      }));
      const [processes, finished] = await Promise.all([workersOf(this.redis, queue), this.redis.get(drainedCounterKey(queue))]);
      return { queue, shards, processes, finished: Number(finished ?? 0) };
    }));
  }

  async channelStates(): Promise<ChannelState[]> {
    const channels = await this.channels.all();
    const now = Date.now();
    const [inFlight, cooling] = await Promise.all([
      Promise.all(channels.map((c) => (c.max_concurrency > 0 ? this.redis.zcount(routingKeys.leases(c.id), now, '+inf') : Promise.resolve(0)))),
      Promise.all(channels.map((c) => this.redis.hget(routingKeys.health(c.id), 'cooldown_until'))),
    ]);
    return channels.map((channel, i) => stateOf(channel, inFlight[i]!, Number(cooling[i] ?? 0), now));
  }
}

function stateOf(channel: Channel, inFlight: number, coolingUntil: number, now: number): ChannelState {
  const condition: ChannelCondition = channel.status === ChannelStatus.autoDisabled ? 'auto_disabled' : channel.status === ChannelStatus.manuallyDisabled ? 'disabled' : coolingUntil > now ? 'cooling_down' : 'enabled';
  return {
    id: channel.id,
    name: channel.name,
    type: channel.type,
    tag: channel.tag ?? '',
    in_flight: inFlight,
    max_concurrency: channel.max_concurrency,
    condition,
    ...(condition === 'cooling_down' ? { cooling_until: coolingUntil } : {}),
    ...(channel.status_reason ? { status_reason: channel.status_reason } : {}),
  };
}
