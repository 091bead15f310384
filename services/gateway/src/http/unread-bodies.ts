import type { IncomingMessage } from 'node:http';
import { Socket } from 'node:net';

/** How often the sockets reading dropped bodies are measured, and paused or resumed. */
const TICK_MS = 10;
/** What one socket let go is expected to read before the next measurement (libuv reads 64 KiB at a time). */
const RESUME_BYTES = 256 * 1024;

/**
 * The body of a request answered before it was read (refused from its headers: no quota, the
 * byte budget, a bad key, an unknown path) is still read and dropped, so that a client still
 * sending reads its answer instead of a reset, and its connection can carry its next request.
 * Node reads such a body as fast as it comes. A flood of them (100 refused bodies of 10 MB is a
 * gigabyte) then costs the gateway, and the sender beside it, a core each, and every other
 * user's request waits for CPU: measured, another key's p99 went from 23 ms to 298 ms while
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
  /** Sockets reading a dropped body, each with its `bytesRead` when last measured, in turn order. */
  private readonly draining = new Map<Socket, number>();
  /** Those of them paused here (and only those are resumed here: Node pauses sockets of its own). */
  private readonly held = new Set<Socket>();
  private ticker: NodeJS.Timeout | undefined;

  constructor(bytesPerSecond: number) {
    this.bytesPerSecond = bytesPerSecond;
    this.burst = Math.max(RESUME_BYTES, bytesPerSecond / 10);
    this.credit = this.burst;
  }

  /** Sockets reading a dropped body now (for tests and metrics). */
  get size(): number {
    return this.draining.size;
  }

  /**
   * Whether an answer of `status` may keep the connection of `body` that Fastify closes: one past
   * the route's limit, whose client, still sending, would read a reset instead of its 413. Its
   * body is dropped as any unread body, when it says it is at most a second of dropping; a
   * larger one, or one that says nothing (chunked), is closed as before.
   */
  keepsConnection(body: IncomingMessage, status: number): boolean {
    return status === 413 && !body.complete && Number(body.headers['content-length']) <= this.bytesPerSecond;
  }

  /** Reads and drops what is left of `body` at the shared rate, if it was not read to its end. */
  dropRest(body: IncomingMessage): void {
    const socket = body.socket as Socket | null;
    // Only a real connection (not an injected request's stand-in) with a body still coming.
    if (body.complete || body.destroyed || !(socket instanceof Socket) || socket.destroyed || this.draining.has(socket)) return;
    // Whatever was reading it (a decoder, a form parser, stopped at a limit or never read from)
    // is done with it: left piped, it would hold the connection until the body's time-out (a
    // GET with a gzip body answered 200, then the connection's next request 408 six seconds on).
    body.unpipe();
    body.resume();
    this.draining.set(socket, socket.bytesRead);
    if (this.credit < 0) this.hold(socket);
    const done = () => {
      // A keep-alive connection may carry many such bodies: nothing of this one stays on it.
      body.off('end', done);
      body.off('close', done);
      socket.off('close', done);
      if (!this.draining.has(socket)) return;
      this.charge(socket);
      this.draining.delete(socket);
      if (this.held.delete(socket) && !socket.destroyed) socket.resume();
      if (this.draining.size === 0) this.stop();
    };
    body.once('end', done);
    body.once('close', done);
    socket.once('close', done);
    this.ticker ??= setInterval(() => this.tick(), TICK_MS).unref();
  }

  /**
   * Charges what each socket read since it was last measured. Over the rate, all are held; under
   * it, as many as the credit covers are let go, in turns, so that neither a thousand sockets read
   * at once in one loop turn nor one sender's sockets take every turn.
   */
  private tick(): void {
    for (const socket of this.draining.keys()) this.charge(socket);
    this.refill();
    let allowance = this.credit;
    for (const socket of [...this.draining.keys()]) {
      if (allowance >= RESUME_BYTES) {
        allowance -= RESUME_BYTES;
        if (this.held.delete(socket)) socket.resume();
        // Its turn taken: to the back of the line.
        const read = this.draining.get(socket)!;
        this.draining.delete(socket);
        this.draining.set(socket, read);
      } else {
        this.hold(socket);
      }
    }
  }

  /** Pauses a socket that is reading (Node may have paused it already, for a body nobody reads). */
  private hold(socket: Socket): void {
    if (this.held.has(socket) || socket.isPaused()) return;
    this.held.add(socket);
    socket.pause();
  }

  private charge(socket: Socket): void {
    const last = this.draining.get(socket);
    if (last === undefined) return;
    const read = socket.bytesRead;
    this.draining.set(socket, read);
    this.credit -= read - last;
  }

  private refill(): void {
    const now = performance.now();
    this.credit = Math.min(this.burst, this.credit + ((now - this.creditAt) * this.bytesPerSecond) / 1000);
    this.creditAt = now;
  }

  private stop(): void {
    clearInterval(this.ticker);
    this.ticker = undefined;
  }
}
