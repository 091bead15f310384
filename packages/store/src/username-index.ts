import type { RedisClient as Redis } from '@gateway/config';
import { conflict, usernameKey, usernameSkeletons, type GatewayError } from '@gateway/contracts';
import { keys } from './keys.ts';
import type { RecordWrite } from './record-write.ts';

type Entry = { key: string; field: string };
type IndexChange = NonNullable<RecordWrite['index']>[number];

/**
 * Where a username is indexed: under its key (NFKC, lower case), which no other user may hold,
 * and under its confusable skeletons (UTS #39), which no other user may share, so a new name
 * can neither repeat nor imitate an existing one. Written in the user's own atomic write.
 */
function entries(username: string): Entry[] {
  return [
    { key: keys.usernameIndex, field: usernameKey(username) },
    ...usernameSkeletons(username).map((field) => ({ key: keys.usernameSkeletonIndex, field })),
  ];
}

/** A new user's name: the entries that must be free, and the index writes. */
export function nameForCreate(username: string): { unique: Entry[]; index: IndexChange[] } {
  const mine = entries(username);
  return { unique: mine, index: mine.map((e) => ({ op: 'hset', ...e, value: '$id' })) };
}

/** A rename (or a new spelling of the same name): entries to hold, and the writes; old ones first. */
export function nameForRename(from: string, to: string): { unique: Entry[]; index: IndexChange[] } {
  const next = entries(to);
  const kept = new Set(next.map((e) => `${e.key} ${e.field}`));
  const dropped = entries(from).filter((e) => !kept.has(`${e.key} ${e.field}`));
  return {
    unique: next,
    index: [...dropped.map((e): IndexChange => ({ op: 'hdel', ...e })), ...next.map((e): IndexChange => ({ op: 'hset', ...e, value: '$id' }))],
  };
}

/** A deleted user's name: its entries go (each only if it is still this user's). */
export function nameForDelete(username: string): IndexChange[] {
  return entries(username).map((e) => ({ op: 'hdel', ...e }));
}

/** The 409 for a name refused by the index: taken (whatever its case or form), or alike. */
export async function nameConflict(redis: Redis, username: string): Promise<GatewayError> {
  const taken = await redis.hexists(keys.usernameIndex, usernameKey(username));
  return conflict(taken ? `username "${username}" is already taken` : `username "${username}" looks like the name of an existing user`);
}

/**
 * Indexes the skeletons of users written before the skeleton index existed, so new names are
 * checked against theirs too; a skeleton already held (two old names that look alike) stays with
 * its holder. Returns how many entries it added.
 */
export async function indexSkeletons(redis: Redis, users: { id: number; username: string }[]): Promise<number> {
  // One pipeline: every key of it is in the store's slot, so it runs on a Redis Cluster too.
  const pipeline = redis.pipeline();
  for (const user of users) {
    for (const field of usernameSkeletons(user.username)) pipeline.hsetnx(keys.usernameSkeletonIndex, field, String(user.id));
  }
  const results = (await pipeline.exec()) ?? [];
  return results.reduce((added, [error, value]) => {
    if (error) throw error;
    return added + Number(value);
  }, 0);
}
