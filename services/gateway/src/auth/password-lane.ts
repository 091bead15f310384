import { overloaded } from '@gateway/contracts';
import { hashPassword, verifyPassword } from '@gateway/store';

export interface PasswordLaneOptions {
  /** scrypt computations at once (PASSWORD_HASH_CONCURRENCY). */
  concurrency: number;
  /** Callers that may wait for a turn; past it, 503 at once. Default 64 per slot. */
  maxWaiting?: number;
}

/**
 * The gateway's own lane for password work (scrypt, about 50 ms of CPU each): at most
 * `concurrency` at once, the rest waiting in order, and a bounded wait, so a flood of sign-ins
 * can neither starve the event loop nor share a queue with the management API.
 */
export class PasswordLane {
  private readonly concurrency: number;
  private readonly maxWaiting: number;
  private running = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(options: PasswordLaneOptions) {
    this.concurrency = options.concurrency;
    this.maxWaiting = options.maxWaiting ?? 64 * options.concurrency;
  }

  hash(password: string): Promise<string> {
    return this.run(() => hashPassword(password));
  }

  verify(password: string, stored: string): Promise<boolean> {
    return this.run(() => verifyPassword(password, stored));
  }

  private async run<T>(work: () => Promise<T>): Promise<T> {
    if (this.running >= this.concurrency) {
      if (this.waiting.length >= this.maxWaiting) {
        throw overloaded('too many sign-ins at once; try again shortly');
      }
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    } else {
      this.running++;
    }
    try {
      return await work();
    } finally {
      // Hand the slot straight to the next in line, or give it back.
      const next = this.waiting.shift();
      if (next) next();
      else this.running--;
    }
  }
}
