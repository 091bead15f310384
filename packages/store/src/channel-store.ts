import { defineLuaScripts, type RedisClient as Redis } from '@gateway/config';
import { notFound, type Channel, type Page } from '@gateway/contracts';
import { decodeFields, encodeFields, nowSeconds, readRecords, type Codec } from './codec.ts';
import { keys } from './keys.ts';
import { alreadyWritten, writeRecord, withRetry, type RecordWrite, type WriteOnce } from './record-write.ts';
import { ChannelKeyCipher, isEncryptedKey } from './channel-key-cipher.ts';
import { maskSecret } from './secrets.ts';
import { storeScripts } from './scripts.ts';
import { publishChange } from './change-messages.ts';

const codec: Codec<Channel> = {
  id: 'int', name: 'string', type: 'string', key: 'string', base_url: 'string', models: 'json',
  group: 'string', tag: 'string', priority: 'int', weight: 'int', model_mapping: 'json', responses_api: 'bool',
  cache_read_ratio: 'json', cache_write_ratio: 'json',
  max_concurrency: 'int', timeout_ms: 'int', status: 'int', status_reason: 'string',
  created_time: 'int', used_quota: 'int', response_time: 'int', key_mask: 'string',
};

export type NewChannel = Pick<Channel, 'name' | 'type' | 'key' | 'base_url' | 'models'> &
  Partial<Pick<Channel, 'key_mask' | 'group' | 'tag' | 'priority' | 'weight' | 'model_mapping' | 'responses_api' | 'cache_read_ratio' | 'cache_write_ratio' | 'max_concurrency' | 'timeout_ms' | 'status'>>;
export type ChannelChanges = Partial<Omit<Channel, 'id' | 'created_time' | 'used_quota' | 'response_time'>>;

/** A channel as a caller may see it: only the key's mask (a key stored before encryption is masked here). */
export function publicChannel(channel: Channel): Channel {
  const { key_mask: mask, ...rest } = channel;
  return { ...rest, key: mask || maskSecret(channel.key) };
}

function decodeChannel(hash: Record<string, string>): Channel {
  const channel = decodeFields(codec, hash);
  channel.models ??= [];
  channel.model_mapping ??= {};
  return channel;
}

export class ChannelStore {
  private readonly redis: Redis;
  constructor(redis: Redis) {
    defineLuaScripts(redis, storeScripts);
    this.redis = redis;
  }

  /** `once`: the job making it, so that a job run again after its worker died makes no second channel. */
  async create(input: NewChannel, once?: WriteOnce): Promise<Channel> {
    const record: Partial<Channel> = {
      group: 'default', tag: '', priority: 0, weight: 1, model_mapping: {}, max_concurrency: 0,
      timeout_ms: 60_000, status: 1, ...input,
      status_reason: '', created_time: nowSeconds(), used_quota: 0, response_time: 0,
    };
    const index: RecordWrite['index'] = [{ op: 'zadd', key: keys.channels }];
    if (record.tag) index.push({ op: 'sadd', key: keys.channelTagIndex(record.tag), value: '$id' });
    const result = await writeRecord(this.redis, {
      create: { seq: keys.channelSeq, prefix: keys.channelPrefix },
      set: encodeFields(codec, record),
      index,
      once,
    });
    if (!result.ok) throw new Error(`channel create failed: ${result.reason}`);
    await this.announce();
    return (await this.get(result.id))!;
  }

  async get(id: number): Promise<Channel | null> {
    const hash = await this.redis.hgetall(keys.channel(id));
    return hash.id ? decodeChannel(hash) : null;
  }

  async update(id: number, changes: ChannelChanges): Promise<Channel> {
    const updated = await withRetry(async () => {
      const current = await this.get(id);
      if (!current) throw notFound(`no channel with id ${id}`);
      const retagged = changes.tag !== undefined && changes.tag !== current.tag;
      const index: RecordWrite['index'] = [];
      if (retagged && current.tag) index.push({ op: 'srem', key: keys.channelTagIndex(current.tag), value: '$id' });
      if (retagged && changes.tag) index.push({ op: 'sadd', key: keys.channelTagIndex(changes.tag), value: '$id' });
      const set = encodeFields(codec, changes);
      // A channel enabled again by hand forgets why it was disabled.
      if (changes.status === 1 && changes.status_reason === undefined) set.status_reason = '';
      const result = await writeRecord(this.redis, {
        key: keys.channel(id), id: String(id), expect: { tag: current.tag }, set, index,
      });
      if (result.ok) return (await this.get(id))!;
      if (result.reason === 'stale') return 'stale';
      throw notFound(`no channel with id ${id}`);
    });
    await this.announce();
    return updated;
  }

  async delete(id: number, once?: WriteOnce): Promise<void> {
    await withRetry(async () => {
      const current = await this.get(id);
      if (!current && (await alreadyWritten(this.redis, once))) return true;
      if (!current) throw notFound(`no channel with id ${id}`);
      const index: RecordWrite['index'] = [{ op: 'zrem', key: keys.channels }];
      if (current.tag) index.push({ op: 'srem', key: keys.channelTagIndex(current.tag), value: '$id' });
      const result = await writeRecord(this.redis, {
        key: keys.channel(id), id: String(id), delete: true, expect: { tag: current.tag }, index, once,
      });
      if (result.ok) return true;
      if (result.reason === 'stale') return 'stale';
      throw notFound(`no channel with id ${id}`);
    });
    await this.announce();
  }

  /** Sets the status of every channel with the tag, atomically; returns how many. */
  async setStatusByTag(tag: string, status: number, reason = ''): Promise<number> {
    const count = await (this.redis as Redis & { gwSetStatusByTag(key: string, prefix: string, status: string, reason: string): Promise<number> })
      .gwSetStatusByTag(keys.channelTagIndex(tag), keys.channelPrefix, String(status), reason);
    await this.announce();
    return count;
  }

  /** Sets one channel's status with a reason (the workers' auto-disable). */
  async setStatus(id: number, status: number, reason: string): Promise<void> {
    const exists = await this.redis.exists(keys.channel(id));
    if (!exists) return;
    await this.redis.hset(keys.channel(id), 'status', String(status), 'status_reason', reason);
    await this.announce();
  }

  async list(page: number, pageSize: number, filter: { tag?: string; status?: number } = {}): Promise<Page<Channel>> {
    const ids = filter.tag !== undefined
      ? (await this.redis.smembers(keys.channelTagIndex(filter.tag))).sort((a, b) => Number(a) - Number(b))
      : await this.redis.zrange(keys.channels, 0, -1);
    let channels = await this.getMany(ids);
    if (filter.status !== undefined) channels = channels.filter((c) => c.status === filter.status);
    return {
      items: channels.slice((page - 1) * pageSize, page * pageSize),
      total: channels.length,
      page,
      page_size: pageSize,
    };
  }

  /**
   * Re-encrypts every channel key not yet under `cipher`'s current key (keys stored in clear
   * before encryption included), and makes every key's mask again by today's rule; returns how
   * many keys were re-encrypted. Each rewrite is guarded by the
   * key it replaces, so a key an admin changes meanwhile is left as the admin set it.
   */
  async reencryptKeys(cipher: ChannelKeyCipher): Promise<number> {
    let rewritten = 0;
    for (const channel of await this.all()) {
      if (cipher.isCurrent(channel.key)) {
        // A mask made by an earlier rule (which showed 7 of a short key's 11 characters) is made again.
        const mask = maskSecret(cipher.decrypt(channel.key));
        if (channel.key_mask && channel.key_mask !== mask) await writeRecord(this.redis, { key: keys.channel(channel.id), id: String(channel.id), expect: { key: channel.key }, set: { key_mask: mask } });
        continue;
      }
      const plain = isEncryptedKey(channel.key) ? cipher.decrypt(channel.key) : channel.key;
      const result = await writeRecord(this.redis, {
        key: keys.channel(channel.id), id: String(channel.id),
        expect: { key: channel.key },
        set: { key: cipher.encrypt(plain), key_mask: maskSecret(plain) },
      });
      if (result.ok) rewritten++;
    }
    await this.announce();
    return rewritten;
  }

  /** Every channel, for routing. */
  async all(): Promise<Channel[]> {
    return this.getMany(await this.redis.zrange(keys.channels, 0, -1));
  }

  private getMany(ids: string[]): Promise<Channel[]> {
    return readRecords(this.redis, keys.channel, ids, decodeChannel);
  }

  private async announce(): Promise<void> {
    await publishChange(this.redis, { kind: 'channels' });
  }
}
