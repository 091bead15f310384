import { Cluster } from 'ioredis';
import type { RedisClient as Redis } from '@gateway/config';
import { publishChange } from './change-messages.ts';
import { keys, STORE_PREFIX } from './keys.ts';

/** Store keys as named before they shared the `{store}` hash tag. */
const UNTAGGED_STORE_KEY = /^gw:(user:|users$|seq:|idx:|channel:|channels$|token:|tokens$|channel-health:)/;

/**
 * Moves a store written before its keys shared the `{store}` hash tag (`gw:user:1` and the
 * like) to today's names (`gw:{store}:user:1`), key by key with RENAMENX, so a key already
 * under its new name is never overwritten; then tells every cache to reload. Idempotent; the
 * admin worker runs it as it starts. A Redis Cluster needs none: clusters began with the new
 * names. Resolves with the number of keys moved.
 */
export async function migrateKeyLayout(redis: Redis): Promise<number> {
  if (redis instanceof Cluster) return 0;
  let moved = 0;
  let cursor = '0';
  do {
    const [next, found] = await redis.scan(cursor, 'MATCH', 'gw:*', 'COUNT', 1000);
    cursor = next;
    for (const key of found) {
      if (key.startsWith(STORE_PREFIX) || !UNTAGGED_STORE_KEY.test(key)) continue;
      if (await redis.renamenx(key, STORE_PREFIX + key.slice('gw:'.length))) moved++;
    }
  } while (cursor !== '0');
  if (moved > 0) await publishChange(redis, { kind: 'everything' });
  return moved;
}
