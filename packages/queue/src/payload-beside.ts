import { randomUUID } from 'node:crypto';
import type { Redis } from './redis-connection.ts';

/**
 * A large payload goes beside its job, as a Redis list of slices of its own, not in the job's data.
 *
 * In the job, BullMQ's scripts copy it several times on Redis's one thread (the add's unpack and
 * HMSET, the fetch's HGETALL and reply) and the AOF writes it: a job with a 10 MB body held Redis
 * for about 345 ms of commands and more in AOF writes, every other tenant's commands (their
 * enqueues, their workers' fetches) waiting behind it. Measured: another key's request waited
 * 1.2 s for a worker to take it while three such jobs went through.
 *
 * Beside it, the payload is pushed 256 KiB at a time, in memory only (`gwPayloadPush`: not
 * written to the AOF nor to replicas), and read back a few slices at a time: Redis never stops for
 * more than a few milliseconds for it (measured beside a PING every millisecond: worst 6 to 9 ms
 * a 10 MB payload, against 30 to 100 ms through the AOF). The price: a payload lost with a Redis
 * restart or failover while its job waits is a 503 to send the request again.
 *
 * Below PAYLOAD_INLINE_MAX_CHARS a payload stays in the job: there the pushes, reads and UNLINK
 * would cost more round trips than the copies they save.
 */
export const PAYLOAD_INLINE_MAX_CHARS = 64 * 1024;

/** One push: at most 256 Ki characters (or bytes), about 1 ms of Redis's thread on this machine for ASCII. */
const SLICE_CHARS = 256 * 1024;
/** Slices one read takes. */
const SLICES_PER_READ = 4;

/**
 * A payload outlives its job's deadline by this long, for a job taken late (its worker died and
 * another took it over), or a worker that must still give back what the job held. Each is
 * removed when its job ends; only a process that died in between leaves one to run out.
 */
const PAYLOAD_GRACE_MS = 3_600_000;

/**
 * A key of its own for each payload stored, not the job's id: a batch line fed again under the
 * same job id while its first job still reads its payload must not write into that one.
 */
export const newPayloadKey = () => `gw:payload:${randomUUID()}`;

type Scripted = Redis & { gwPayloadPush(key: string, slice: string | Buffer, ttlMs: number): Promise<number> };

/**
 * Stores a job's payload (its JSON text, in parts: text, or UTF-8 bytes) under `key`
 * (newPayloadKey), a slice at a time, on a connection the queue's scripts are defined on
 * (`queueScripts`, as JobClient does at start-up). The reader joins the slices' bytes before
 * decoding them, so a slice of bytes may end anywhere.
 */
export async function putPayload(redis: Redis, key: string, parts: readonly (string | Buffer)[], deadline: number): Promise<void> {
  const scripted = redis as Scripted;
  const ttlMs = Math.max(1, deadline - Date.now()) + PAYLOAD_GRACE_MS;
  for (const part of parts) {
    if (typeof part !== 'string') {
      for (let at = 0; at < part.length; at += SLICE_CHARS) await scripted.gwPayloadPush(key, part.subarray(at, at + SLICE_CHARS), ttlMs);
      continue;
    }
    // Slices of the text, each encoded as it is sent: no whole second copy of a large payload
    // made at once on the event loop.
    for (const slice of textSlices(part, SLICE_CHARS)) await scripted.gwPayloadPush(key, slice, ttlMs);
  }
}

/** A text's slices: each about `size` UTF-16 units, never ending inside a surrogate pair. */
export function* textSlices(text: string, size: number): Generator<string> {
  for (let at = 0; at < text.length;) {
    let end = Math.min(at + size, text.length);
    const last = text.charCodeAt(end - 1);
    if (last >= 0xd800 && last <= 0xdbff && end < text.length) end++;
    yield text.slice(at, end);
    at = end;
  }
}

/** A payload's JSON text, read a few slices at a time; undefined when it is gone (run out, or lost). */
export async function takePayload(redis: Redis, key: string): Promise<string | undefined> {
  const slices: Buffer[] = [];
  for (let at = 0; ; at += SLICES_PER_READ) {
    const read = await redis.lrangeBuffer(key, at, at + SLICES_PER_READ - 1);
    slices.push(...read);
    if (read.length < SLICES_PER_READ) break;
  }
  return slices.length === 0 ? undefined : Buffer.concat(slices).toString('utf8');
}

/** Removes a payload (UNLINK: a large one is freed off Redis's main thread). */
export function dropPayload(redis: Redis, key: string): void {
  redis.unlink(key).catch(() => {});
}
