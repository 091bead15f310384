import { overloaded, rateLimited } from '@gateway/contracts';

export interface LogReadTurnsOptions {
  /** Connections any reader may take. */
  shared: number;
  /** Connections only administrators may take (the console, the management API's whole log). */
  reserved: number;
  /** Longest a read waits for its turn before a 503 that says the log is busy. */
  waitMs: () => number;
  /** Reads of one user that may wait at once; past it, 429. */
  waitingPerUser: number;
}

/** Who reads: a user, and whether it is an administrator. */
export interface LogReader {
  id: number;
  admin: boolean;
}

type Slot = 'shared' | 'reserved';
interface Waiter { admin: boolean; grant: (slot: Slot) => void }

/**
 * Turns on the request log's few connections: each user runs one read at a time, the others
 * wait in a queue served round-robin by user, and administrators have a connection of their own.
 * Two users with heavy reads held every connection (two each), and everyone, the console
 * included, got "PostgreSQL unavailable" 503s after 8 to 10 s of waiting for the pool.
 */
export class LogReadTurns {
  private readonly options: LogReadTurnsOptions;
  private readonly inUse: Record<Slot, number> = { shared: 0, reserved: 0 };
  private readonly running = new Set<number>();
  /** Each user's waiting reads; the map's order is the round's (a user served goes to its end). */
  private readonly waiting = new Map<number, Waiter[]>();

  constructor(options: LogReadTurnsOptions) {
    this.options = options;
  }

  async run<T>(reader: LogReader, read: () => Promise<T>): Promise<T> {
    const slot = await this.turn(reader);
    try {
      return await read();
    } finally {
      this.running.delete(reader.id);
      this.inUse[slot]--;
      // The user just served goes to the end of the round.
      const queue = this.waiting.get(reader.id);
      if (queue) {
        this.waiting.delete(reader.id);
        this.waiting.set(reader.id, queue);
      }
      this.serve();
    }
  }

  private turn(reader: LogReader): Promise<Slot> {
    if (!this.running.has(reader.id) && !this.waiting.has(reader.id)) {
      const slot = this.free(reader.admin);
      if (slot) {
        this.take(reader.id, slot);
        return Promise.resolve(slot);
      }
    }
    const queue = this.waiting.get(reader.id) ?? [];
    if (queue.length >= this.options.waitingPerUser) {
      return Promise.reject(rateLimited(`this user already has a read of the request log running and ${queue.length} waiting; retry when one has ended`, 1));
    }
    const waitMs = this.options.waitMs();
    return new Promise<Slot>((resolve, reject) => {
      const waiter: Waiter = {
        admin: reader.admin,
        grant: (slot) => {
          clearTimeout(timer);
          resolve(slot);
        },
      };
      const timer = setTimeout(() => {
        this.leave(reader.id, waiter);
        reject(overloaded(`the request log is busy: every connection for its reads was taken for ${waitMs} ms (other users' reads, each at most LOG_QUERY_TIMEOUT_MS); retry shortly`, Math.max(1, Math.ceil(waitMs / 1000))));
      }, waitMs);
      queue.push(waiter);
      this.waiting.set(reader.id, queue);
    });
  }

  /** Gives each free connection to the next user in the round with a read waiting and none running. */
  private serve(): void {
    for (const [id, queue] of [...this.waiting]) {
      if (this.running.has(id)) continue;
      const slot = this.free(queue[0]!.admin);
      if (!slot) continue;
      const waiter = queue.shift()!;
      this.waiting.delete(id);
      if (queue.length > 0) this.waiting.set(id, queue);
      this.take(id, slot);
      waiter.grant(slot);
    }
  }

  /** An administrator takes its own connection first, leaving the shared ones to the users. */
  private free(admin: boolean): Slot | undefined {
    if (admin && this.inUse.reserved < this.options.reserved) return 'reserved';
    if (this.inUse.shared < this.options.shared) return 'shared';
    return undefined;
  }

  private take(id: number, slot: Slot): void {
    this.inUse[slot]++;
    this.running.add(id);
  }

  private leave(id: number, waiter: Waiter): void {
    const queue = this.waiting.get(id);
    if (!queue) return;
    const at = queue.indexOf(waiter);
    if (at !== -1) queue.splice(at, 1);
    if (queue.length === 0) this.waiting.delete(id);
  }
}
