import { Cluster } from 'ioredis';
import type { RedisClient as Redis } from '@gateway/config';

/**
 * One atomic write of a record and its indexes, as a Lua script: either every change lands or
 * none does, so an index never disagrees with the records. `expect` makes an update
 * optimistic: if a field it read has changed meanwhile, the write is refused as STALE and the
 * caller re-reads and retries.
 */
export interface RecordWrite {
  create?: { seq: string; prefix: string };
  key?: string;
  id?: string;
  expect?: Record<string, string>;
  /** Index hashes in which `field` must be free (or already point at this record). */
  unique?: { key: string; field: string }[];
  set?: Record<string, string>;
  delete?: boolean;
  /** Index changes; a `value` of `$id` is the record's id. */
  index?: { op: 'hset' | 'hdel' | 'sadd' | 'srem' | 'zadd' | 'zrem'; key: string; field?: string; value?: string }[];
}

export type RecordWriteResult =
  | { ok: true; id: number }
  | { ok: false; reason: 'not_found' }
  | { ok: false; reason: 'stale'; field: string }
  | { ok: false; reason: 'conflict'; field: string };

const SCRIPT = `
local op = cjson.decode(ARGV[1])
-- KEYS[1] only routes the script to the store's slot; every key it touches is in that slot.
local id = op.id
local key
if op.create then
  for _, u in ipairs(op.unique or {}) do
    if redis.call('HEXISTS', u.key, u.field) == 1 then return {'CONFLICT', u.field} end
  end
  id = tostring(redis.call('INCR', op.create.seq))
  key = op.create.prefix .. id
else
  key = op.key
  if redis.call('EXISTS', key) == 0 then return {'NOT_FOUND'} end
  if op.expect then
    for f, v in pairs(op.expect) do
      local current = redis.call('HGET', key, f)
      if not current then current = '' end
      if current ~= v then return {'STALE', f} end
    end
  end
  for _, u in ipairs(op.unique or {}) do
    local owner = redis.call('HGET', u.key, u.field)
    if owner and owner ~= id then return {'CONFLICT', u.field} end
  end
end
if op.delete then
  redis.call('DEL', key)
else
  local args = {}
  if op.set then
    for f, v in pairs(op.set) do
      args[#args + 1] = f
      args[#args + 1] = v
    end
  end
  if op.create then
    args[#args + 1] = 'id'
    args[#args + 1] = id
  end
  if #args > 0 then redis.call('HSET', key, unpack(args)) end
end
for _, x in ipairs(op.index or {}) do
  local v = x.value
  if v == '$id' then v = id end
  if x.op == 'hset' then redis.call('HSET', x.key, x.field, v)
  elseif x.op == 'hdel' then
    if redis.call('HGET', x.key, x.field) == id then redis.call('HDEL', x.key, x.field) end
  elseif x.op == 'sadd' then redis.call('SADD', x.key, v)
  elseif x.op == 'srem' then redis.call('SREM', x.key, v)
  elseif x.op == 'zadd' then redis.call('ZADD', x.key, tonumber(id), id)
  elseif x.op == 'zrem' then redis.call('ZREM', x.key, id)
  end
end
return {'OK', id}
`;

type Scripted = Redis & { gwRecordWrite(routingKey: string, json: string): Promise<string[]> };

export async function writeRecord(redis: Redis, write: RecordWrite): Promise<RecordWriteResult> {
  const scripted = redis as Scripted;
  if (typeof scripted.gwRecordWrite !== 'function') {
    redis.defineCommand('gwRecordWrite', { numberOfKeys: 1, lua: SCRIPT });
  }
  const routingKey = write.key ?? write.create!.seq;
  const [status, detail] = await scripted.gwRecordWrite(routingKey, JSON.stringify(write));
  if (status === 'OK') {
    await replicated(redis, routingKey);
    return { ok: true, id: Number(detail) };
  }
  if (status === 'NOT_FOUND') return { ok: false, reason: 'not_found' };
  if (status === 'STALE') return { ok: false, reason: 'stale', field: detail! };
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
  throw new Error('record changed concurrently too many times');
}
