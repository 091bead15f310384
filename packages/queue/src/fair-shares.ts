import { defineLuaScripts } from '@gateway/config';
import { BATCH_RANK_BASE, isBatchRank, type QueueName } from '@gateway/contracts';
import type { Redis } from './redis-connection.ts';
import { queueScripts } from './queue-scripts.ts';


type Scripted = Redis & {
  gwFairJoin(line: string, keys: string, kind: string, tokenId: number, most: number, mostVirtual: number, mostListed: number): Promise<[number, number, number]>;
  gwFairLeave(line: string, keys: string, kind: string, tokenId: number, rank: number, listed: number): Promise<number>;
};

/** Whose work a job is: fair shares go to users first, then to each user's keys. */
export interface Tenant {
  userId: number;
  tokenId: number;
  /** The job went on BullMQ's wait list rather than by priority (`FairPlace.listed`). */
  listed?: boolean;
}

/** A job's place among the waiting work: its BullMQ priority, and how to give the place up. */
export interface FairPlace {
  priority: number;
  /**
   * An interactive job that goes on BullMQ's wait list, ahead of every prioritized job and
   * cheaper: its tenant had nothing else waiting (new flows first), or its user is the only one
   * waiting and fewer than MOST_LISTED jobs are listed (a newcomer waits behind those at most).
   */
  listed: boolean;
  /** Its tenant (user and key) had nothing else waiting in its class: it ranks with the jobs being taken now. */
  firstOfTenant: boolean;
  /** Once, when the job leaves the queue (taken by a worker, or removed unrun). */
  leave(): void;
}

const MOST_RANK = BATCH_RANK_BASE - 2;
/**
 * The virtual time stops here under a backlog that never empties (it rises by about one a job
 * served), leaving room above it for places: a tenant's place is at most its backlog, which
 * admission bounds (ADMISSION_MAX_BACKLOG, 100,000 by default).
 */
const MOST_VIRTUAL = 800_000;
/**
 * A user alone in the queue lists at most this many jobs on the wait list at once: one tenant
 * alone needs no ranks, and BullMQ's prioritized set is dearer (at c=64, 1,185 req/s against
 * 1,497 with every job listed, back to back on this machine). Kept small, since a newcomer's
 * first job waits behind the listed ones.
 */
const MOST_LISTED = 4;

/**
 * Fair shares of a queue between tenants, with BullMQ's own priorities: each job is enqueued
 * with a rank, the virtual time of the queue plus its place in its tenant's line (a round robin
 * between users, and between each user's keys), so BullMQ hands jobs out round robin between
 * the tenants waiting (start-time fair queueing) instead of first come, first served. A tenant
 * with 1,500 jobs waiting takes ranks far ahead; another tenant's next job takes the queue's
 * current rank and is served next. Batch ranks all follow interactive ones. The counts live in
 * one hash tag per queue (one slot on a Redis Cluster), and run out an hour after they were last
 * renewed, so a process that died between a join and its leave skews a tenant's rank for no
 * longer.
 */
export class FairShares {
  private readonly redis: Scripted;

  constructor(redis: Redis) {
    defineLuaScripts(redis, queueScripts);
    this.redis = redis as Scripted;
  }

  async join(queue: QueueName, tenant: Tenant, batch: boolean): Promise<FairPlace> {
    const kind = batch ? 'b' : 'i';
    const [rank, listed, place] = await this.redis.gwFairJoin(lineKey(queue), tenantKey(queue, kind, tenant.userId), kind, tenant.tokenId, MOST_RANK, MOST_VIRTUAL, MOST_LISTED);
    // BullMQ's priority 0 skips the priorities: priorities start at 1.
    const priority = 1 + rank + (batch ? BATCH_RANK_BASE : 0);
    let left = false;
    return {
      priority,
      listed: listed === 1,
      firstOfTenant: place === 1,
      leave: () => {
        if (left) return;
        left = true;
        void this.leave(queue, { ...tenant, listed: listed === 1 }, priority);
      },
    };
  }

  /**
   * Interactive jobs waiting in the queue whose user is none of `users` (a lane's tenants at
   * their share): another tenant's request waiting for a slot (`LaneGate`).
   */
  async waitingBesides(queue: QueueName, users: readonly number[]): Promise<number> {
    const all = this.redis.hget(lineKey(queue), 'i:n');
    const theirs = await Promise.all(users.map((user) => this.redis.hvals(tenantKey(queue, 'i', user))));
    const counted = theirs.flat().reduce((sum, n) => sum + Math.max(0, Number(n)), 0);
    return Math.max(0, Number((await all) ?? 0) - counted);
  }

  /** The job with this priority left the queue (the worker's side of `FairPlace.leave`). */
  async leave(queue: QueueName, tenant: Tenant, priority: number): Promise<void> {
    const batch = isBatchRank(priority);
    const kind = batch ? 'b' : 'i';
    const rank = priority - 1 - (batch ? BATCH_RANK_BASE : 0);
    // A count left behind skews one tenant's ranks until it runs out; nothing else depends on it.
    await this.redis.gwFairLeave(lineKey(queue), tenantKey(queue, kind, tenant.userId), kind, tenant.tokenId, rank, tenant.listed ? 1 : 0).catch(() => {});
  }
}

const lineKey = (queue: QueueName) => `gw:{fair:${queue}}:line`;
const tenantKey = (queue: QueueName, kind: string, userId: number) => `gw:{fair:${queue}}:${kind}:user:${userId}`;
