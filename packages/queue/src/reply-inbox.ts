import { setTimeout as sleep } from 'node:timers/promises';
import { GatewayError, internalError, overloaded, type ErrorReply } from '@gateway/contracts';
import type { Redis } from './redis-connection.ts';
import { INGRESS_HEARTBEAT_MS, INGRESS_TTL_MS, ReplyType, ingressKey, replyStreamKey } from './reply-keys.ts';

interface Waiter {
  /** Called with the result's JSON text. */
  resolve: (json: string) => void;
  reject: (error: GatewayError) => void;
  onChunk?: (chunk: string) => void;
}

export interface ReplyInboxOptions {
  /**
   * An inbox that outlives its reader (a batch's, which another batch worker takes over): entries
   * are kept once read until `trimBefore` drops them (once its owner has written down what they
   * said), so a successor reads again what a crash left unrecorded; and `stop` leaves the
   * jobs it waits for to run on (workers still see it alive until its heartbeat runs out, or a
   * successor's renews it); `remove` ends it for good. Default: entries deleted once read, and
   * `stop` tells workers at once that nobody waits any more.
   */
  durable?: boolean;
  /**
   * How long its heartbeat keeps it alive to workers without a renewal (default INGRESS_TTL_MS).
   * A durable inbox outlives its reader for as long as a successor may take to come.
   */
  heartbeatTtlMs?: number;
}

/**
 * The ingress's side of the reply path: one Redis stream per ingress instance, read by one
 * blocking XREAD loop that hands each reply in each entry to the request waiting for that job. Entries are
 * deleted once read (unless `durable`); a reconnect resumes after the last entry read, so no
 * reply is lost while the connection blips.
 */
export class ReplyInbox {
  readonly id: string;
  private readonly reader: Redis;
  private readonly writer: Redis;
  private readonly key: string;
  private readonly waiters = new Map<string, Waiter>();
  private lastId = '0-0';
  private running = false;
  private loop: Promise<void> | undefined;
  private heartbeat: NodeJS.Timeout | undefined;
  private readonly durable: boolean;
  private readonly heartbeatTtlMs: number;

  /** `reader` is dedicated to the blocking read; `writer` is a shared command connection. */
  constructor(id: string, reader: Redis, writer: Redis, options: ReplyInboxOptions = {}) {
    this.id = id;
    this.reader = reader;
    this.writer = writer;
    this.key = replyStreamKey(id);
    this.durable = options.durable ?? false;
    this.heartbeatTtlMs = options.heartbeatTtlMs ?? INGRESS_TTL_MS;
  }

  /**
   * The id of the last entry read: every reply up to it has been handed to its waiter (its
   * waiter's own promise chain may still be a few microtask turns from its end).
   */
  get lastRead(): string {
    return this.lastId;
  }

  /** Drops the entries before `id` (`durable`: once what they said is written down). */
  async trimBefore(id: string): Promise<void> {
    if (id !== '0-0') await this.writer.xtrim(this.key, 'MINID', id);
  }

  /** Deletes the stream, read or not, and its heartbeat: its owner is done with it. */
  async remove(): Promise<void> {
    await this.writer.del(this.key, ingressKey(this.id));
  }

  get waiting(): number {
    return this.waiters.size;
  }

  /**
   * Starts reading, and a heartbeat that tells the workers this ingress still waits for its
   * jobs: when it dies, they drop its jobs instead of calling upstreams nobody will answer.
   */
  start(): void {
    if (this.running) return;
    this.running = true;
    const beat = () => void this.writer.set(ingressKey(this.id), '1', 'PX', this.heartbeatTtlMs).catch(() => {});
    beat();
    this.heartbeat = setInterval(beat, INGRESS_HEARTBEAT_MS);
    this.heartbeat.unref();
    this.loop = this.readLoop();
  }

  async stop(): Promise<void> {
    this.running = false;
    clearInterval(this.heartbeat);
    if (!this.durable) await this.writer.del(ingressKey(this.id)).catch(() => {});
    this.reader.disconnect();
    await this.loop;
    for (const waiter of this.waiters.values()) {
      waiter.reject(overloaded('the gateway is shutting down'));
    }
    this.waiters.clear();
  }

  /** Registers interest in a job's reply before the job is enqueued, so none can slip past. */
  expect(jobId: string, onChunk?: (chunk: string) => void): Promise<string> {
    return new Promise((resolve, reject) => {
      this.waiters.set(jobId, { resolve, reject, onChunk });
    });
  }

  /** Stops waiting for a job; later entries for it are dropped. */
  forget(jobId: string): void {
    this.waiters.delete(jobId);
  }

  private async readLoop(): Promise<void> {
    while (this.running) {
      let batch: [string, [string, string[]][]][] | null;
      try {
        batch = (await this.reader.xread('COUNT', 1000, 'BLOCK', 5000, 'STREAMS', this.key, this.lastId)) as typeof batch;
      } catch {
        if (!this.running) return;
        await sleep(50);
        continue;
      }
      if (!batch) continue;
      const entries = batch[0]![1];
      const ids: string[] = new Array(entries.length);
      for (let i = 0; i < entries.length; i++) {
        const [entryId, fields] = entries[i]!;
        ids[i] = entryId;
        // Field: the reply's type (one character) and job id; value: its data (see replyField).
        for (let f = 0; f + 1 < fields.length; f += 2) {
          const field = fields[f]!;
          try {
            this.dispatch(field.slice(1), field[0]!, fields[f + 1]!);
          } catch (error) {
            // One entry that cannot be read (written by another version, damaged) fails its own
            // request, never the loop that reads every other request's replies.
            this.fail(field.slice(1), error);
          }
        }
      }
      this.lastId = ids[ids.length - 1]!;
      if (!this.durable) this.writer.xdel(this.key, ...ids).catch(() => {});
    }
  }

  private fail(jobId: string, error: unknown): void {
    const waiter = this.waiters.get(jobId);
    this.waiters.delete(jobId);
    waiter?.reject(error instanceof GatewayError ? error : internalError());
  }

  private dispatch(jobId: string, type: string, data: string): void {
    const waiter = this.waiters.get(jobId);
    if (!waiter) return;
    if (type === ReplyType.chunk) {
      waiter.onChunk?.(data);
      return;
    }
    // Read before the waiter is let go: an error reply that cannot be read fails it (`fail`).
    const failure = type === ReplyType.result ? undefined : errorOf(JSON.parse(data));
    this.waiters.delete(jobId);
    if (failure) waiter.reject(failure);
    else waiter.resolve(data);
  }
}

/** An error reply as the worker wrote it; anything else (not this version's, damaged) throws. */
function errorOf(reply: unknown): GatewayError {
  const { status, message } = (reply ?? {}) as Partial<ErrorReply>;
  if (typeof status !== 'number' || typeof message !== 'string') throw new Error('an error reply without a status and a message');
  return new GatewayError(reply as ErrorReply);
}
