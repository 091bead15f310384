import { Cluster } from 'ioredis';
import { defineLuaScripts, type RedisClient as Redis } from '@gateway/config';
import { conflict } from '@gateway/contracts';
import { keys } from './keys.ts';
import { storeScripts } from './scripts.ts';

/**
 * One atomic write of a record and its indexes, as a Lua script: either every change lands or
 * none does, so an index never disagrees with the records. `expect` makes an update
 * optimistic: if a field it read has changed meanwhile, the write is refused as STALE and the
 * caller re-reads and retries.
 */
export interface RecordWrite {
  /** A new record, numbered by `seq`; `above`, a number its id must be greater than. */
  create?: { seq: string; prefix: string; above?: number };
  key?: string;
  id?: string;
  expect?: Record<string, string>;
  /** Index hashes in which `field` must be free (or already point at this record). */
  unique?: { key: string; field: string }[];
  /** On create: a set (an index) that must hold fewer than `max` members. */
  limit?: { key: string; max: number };
  set?: Record<string, string>;
  delete?: boolean;
  /** Index changes; a `value` of `$id` is the record's id. */
  index?: { op: 'hset' | 'hdel' | 'sadd' | 'srem' | 'zadd' | 'zrem'; key: string; field?: string; value?: string }[];
  /** The job this write belongs to: written once, however often the job runs (see WriteOnce). */
  once?: WriteOnce;
}

/**
 * A write keyed by the job that makes it. A worker killed after its write committed but before
 * its job was marked done leaves the job to run again as stalled; the write records the job's
 * key with the record's id in the same script, and the second run gets that id back instead of
 * writing again. Kept until the job could no longer run (its deadline), plus a margin.
 */
export interface WriteOnce {
  key: string;
  ttlMs: number;
}

/** The WriteOnce of a job: `jobId` is unique per request, `deadline` when no worker would run it any more. */
export function writeOnce(jobId: string, deadline: number, now = Date.now()): WriteOnce {
  return { key: keys.appliedJob(jobId), ttlMs: Math.max(0, deadline - now) + ONCE_MARGIN_MS };
}

/** Past the deadline, for clocks that disagree between hosts. */
const ONCE_MARGIN_MS = 10 * 60_000;

/** True when the job of `once` has already made its write (a delete re-run finds nothing left). */
export async function alreadyWritten(redis: Redis, once: WriteOnce | undefined): Promise<boolean> {
  return once !== undefined && (await redis.exists(once.key)) === 1;
}

export type RecordWriteResult =
  | { ok: true; id: number }
  | { ok: false; reason: 'not_found' }
  | { ok: false; reason: 'stale'; field: string }
  | { ok: false; reason: 'conflict'; field: string }
  | { ok: false; reason: 'limit' };

type Scripted = Redis & { gwRecordWrite(routingKey: string, json: string): Promise<string[]> };

export async function writeRecord(redis: Redis, write: RecordWrite): Promise<RecordWriteResult> {
  const scripted = redis as Scripted;
  if (typeof scripted.gwRecordWrite !== 'function') defineLuaScripts(redis, storeScripts);
  const routingKey = write.key ?? write.create!.seq;
  const [status, detail] = await scripted.gwRecordWrite(routingKey, JSON.stringify(write));
  if (status === 'OK') {
    await replicated(redis, routingKey);
    return { ok: true, id: Number(detail) };
  }
  if (status === 'NOT_FOUND') return { ok: false, reason: 'not_found' };
  if (status === 'STALE') return { ok: false, reason: 'stale', field: detail! };
  if (status === 'LIMIT') return { ok: false, reason: 'limit' };
  return { ok: false, reason: 'conflict', field: detail! };
}

/** How long a write on a cluster waits for a replica to have it before it is acknowledged anyway. */
const REPLICA_WAIT_MS = 1000;

/**
 * On a Redis Cluster, waits (WAIT 1, at most REPLICA_WAIT_MS) until a replica of the store's
 * master has the write, so that a master killed right after cannot take an acknowledged
 * management change with it: replication is asynchronous, and the replica that takes over has
 * only what it received. With no replica answering in time the write stands (availability
 * first). A single server has no replicas to wait for.
 */
async function replicated(redis: Redis, key: string): Promise<void> {
  if (!(redis instanceof Cluster)) return;
  // A pipeline goes to the node of its keys' slot: WAIT runs on the store's master.
  await redis.pipeline().exists(key).call('WAIT', 1, REPLICA_WAIT_MS).exec();
}

/** Re-reads and retries a write refused as STALE by a concurrent writer. */
export async function withRetry<T>(attempt: () => Promise<T | 'stale'>, tries = 10): Promise<T> {
  for (let i = 0; i < tries; i++) {
    const result = await attempt();
    if (result !== 'stale') return result;
  }
  // Another writer won every time (a key whose quota its requests keep settling): a 409 to send
  // the change again, not a fault of the gateway's.
  throw conflict('the record changed while it was being written, again and again: send the change again');
}
