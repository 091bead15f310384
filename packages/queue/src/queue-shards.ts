import calculateSlot from 'cluster-key-slot';
import { QUEUE_PREFIX, QueueName } from '@gateway/contracts';

const SLOTS = 16_384;

/** The shard prefixes of every split queue, by number of shards (they do not depend on the queue). */
const computed = new Map<number, string[]>();

/**
 * The BullMQ key prefixes of a queue's shards (QUEUE_SHARDS). One shard keeps the prefix the
 * queues have always had (`{gw}`). Split into N, the completion and audio queues get N prefixes
 * whose hash tags fall in N even slices of Redis Cluster's 16,384 slots, so that on a cluster of
 * N masters with the usual even slot ranges each shard lands on a master of its own. The tag of
 * slice i is the first `gw:s<i>:<k>` (k = 0, 1, …) whose slot is in the slice: the same on every
 * process, with nothing stored. The admin queue is never split.
 */
export function shardPrefixes(queue: QueueName, shards: number): string[] {
  if (shards <= 1 || queue === QueueName.admin) return [QUEUE_PREFIX];
  let prefixes = computed.get(shards);
  if (!prefixes) computed.set(shards, (prefixes = tagsFor(shards)));
  return prefixes;
}

function tagsFor(shards: number): string[] {
  return Array.from({ length: shards }, (_, i) => {
    const from = Math.floor((i * SLOTS) / shards);
    const to = Math.floor(((i + 1) * SLOTS) / shards);
    for (let k = 0; ; k++) {
      const tag = `gw:s${i}:${k}`;
      const slot = calculateSlot(tag);
      if (slot >= from && slot < to) return `{${tag}}`;
    }
  });
}
