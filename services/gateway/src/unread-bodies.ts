import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';

/** How often the sockets reading dropped bodies are measured, and paused or resumed. */
const TICK_MS = 10;

/**
 * The body of a request answered before it was read (refused from its headers: no quota, the
 * byte budget, a bad key, an unknown path) is still read and dropped, so that a client still
 * sending reads its answer instead of a reset, and its connection can carry its next request.
 * Node reads such a body as fast as it comes. A flood of them (100 refused bodies of 10 MB is a
 * gigabyte) then costs the gateway, and the sender beside it, a core each, and every other
 * tenant's request waits for CPU: measured, another key's p99 went from 23 ms to 298 ms while
 * nothing of the flood was admitted, the gateway reading 450 MB a second.
 *
 * Here all such bodies together are read at most at `bytesPerSecond`
 * (UNREAD_BODY_BYTES_PER_SECOND): the sockets reading them are measured every TICK_MS and paused
 * while they are over the rate, and TCP holds their senders, which then spend nothing either.
 * Their answers have already gone; a client that keeps sending is cut off by its request's own
 * time limit (BODY_TIMEOUT_MS), as a slow body would be.
 *
 * It is done on the sockets, not on the body's stream: once the answer is sent Node takes over
 * an unread body (IncomingMessage's `_dump`) and drops its bytes as the socket reads them.
 */
export class UnreadBodies {
  private readonly bytesPerSecond: number;
  /** What may be read at once after a quiet spell: a tenth of a second of the rate. */
  private readonly burst: number;
  private credit: number;
  private creditAt = performance.now();
  /** Sockets reading a dropped body, each with its `bytesRead` when last measured. */
  private readonly draining = new Map<Socket, number>();
  private paused = false;
  private ticker: NodeJS.Timeout | undefined;

  constructor(bytesPerSecond: number) {
    this.bytesPerSecond = bytesPerSecond;
    this.burst = Math.max(64 * 1024, bytesPerSecond / 10);
    this.credit = this.burst;
  }

  /** Sockets reading a dropped body now (for tests and metrics). */
  get size(): number {
    return this.draining.size;
  }

  /** Reads and drops what is left of `body` at the shared rate, if it was not read to its end. */
  dropRest(body: IncomingMessage): void {
    const socket = body.socket as Socket | null;
    if (body.complete || body.destroyed || !socket || socket.destroyed || this.draining.has(socket)) return;
    this.draining.set(socket, socket.bytesRead);
    if (this.paused) socket.pause();
    const done = () => {
      if (!this.draining.has(socket)) return;
      this.charge(socket);
      this.draining.delete(socket);
      if (this.paused && !socket.destroyed) socket.resume();
      if (this.draining.size === 0) this.stop();
    };
    body.once('end', done);
    body.once('close', done);
    socket.once('close', done);
    this.ticker ??= setInterval(() => this.tick(), TICK_MS).unref();
  }

  /**
   * Charges what each socket read since it was last measured; pauses all while over the rate.
   * Each is checked every time: Node resumes a socket of its own accord (when it takes over the
   * body once the answer is sent).
   */
  private tick(): void {
    for (const socket of this.draining.keys()) this.charge(socket);
    this.paused = this.refill() < 0;
    for (const socket of this.draining.keys()) {
      if (this.paused && !socket.isPaused()) socket.pause();
      else if (!this.paused && socket.isPaused()) socket.resume();
    }
  }

  private charge(socket: Socket): void {
    const last = this.draining.get(socket);
    const read = socket.bytesRead;
    if (last !== undefined) this.draining.set(socket, read);
    this.credit -= read - (last ?? read);
  }

  private refill(): number {
    const now = performance.now();
    this.credit = Math.min(this.burst, this.credit + ((now - this.creditAt) * this.bytesPerSecond) / 1000);
    this.creditAt = now;
    return this.credit;
  }

  private stop(): void {
    clearInterval(this.ticker);
    this.ticker = undefined;
    this.paused = false;
  }
}
