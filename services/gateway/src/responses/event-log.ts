/**
 * The events of a streamed background response, recorded as they pass (`stored_response_events`)
 * for its followers (event-follower.ts): written a batch at a time, each batch after the one
 * before, so events come in order and a burst of deltas is one INSERT, not one each.
 */
import type { FastifyBaseLogger } from 'fastify';
import type { ResponseStore } from '@gateway/database';

export class EventLog {
  private readonly store: ResponseStore;
  private readonly id: string;
  private readonly log: FastifyBaseLogger;
  private pending: { seq: number; data: string }[] = [];
  private writing: Promise<void> = Promise.resolve();
  private queued = false;

  constructor(store: ResponseStore, id: string, log: FastifyBaseLogger) {
    this.store = store;
    this.id = id;
    this.log = log;
  }

  add(seq: number, data: string): void {
    this.pending.push({ seq, data });
    if (this.queued) return;
    this.queued = true;
    this.writing = this.writing.then(() => {
      this.queued = false;
      const batch = this.pending;
      this.pending = [];
      return this.store.appendEvents(this.id, batch);
    }).catch((error: unknown) => this.log.warn({ err: error, response: this.id }, 'a background response\'s events could not be recorded'));
  }

  /** Resolves once every event added so far is written. */
  async drained(): Promise<void> {
    let current: Promise<void>;
    do {
      current = this.writing;
      await current;
    } while (current !== this.writing);
  }
}
