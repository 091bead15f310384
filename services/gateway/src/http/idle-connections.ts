import type { Server } from 'node:http';
import type { Socket } from 'node:net';

/**
 * How often Node checks its headersTimeout (`connectionsCheckingInterval` in app.ts): a request's
 * headers may take this much past the time-out before Node closes their connection.
 */
const CHECK_INTERVAL_MS = 1_000;

/**
 * Closes a connection that begins no request, however long it stays open and whatever it sends.
 *
 * Node's own timers leave two ways to hold a connection for good: headersTimeout times only a
 * request that has begun, and the idle timers (the socket's before a first request, which this
 * module arms at `headersMs`, and keepAliveTimeout between requests) are re-armed by any byte.
 * So a connection that sent an empty line (CRLF, which HTTP lets a client send between
 * requests) every minute stayed open: 500 such connections were still open 20 keep-alive
 * time-outs later, one file descriptor each. No count of connections is capped: a burst of real
 * requests, all from one address, is read and answered.
 *
 * So beside the idle timer, a connection with no request in progress (none whose headers are in
 * and whose answer has not ended) has a deadline: `headersMs` twice after it opened, or
 * `keepAliveMs` and then `headersMs` after its last answer ended (each plus Node's check
 * interval). A real request's first byte comes within the idle time-out, or the idle timer closes
 * the connection first, and its headers within `headersMs` of that, or Node's headersTimeout
 * does: the deadline only ever closes a connection that sent something other than a request.
 */
export function closeIdleConnections(server: Server, { headersMs, keepAliveMs }: { headersMs: number; keepAliveMs: number }): void {
  const idle = new WeakMap<Socket, Idle>();
  const deadline = (socket: Socket, state: Idle, ms: number) => {
    state.timer = setTimeout(() => {
      if (state.inProgress === 0) socket.destroy();
    }, ms + headersMs + CHECK_INTERVAL_MS);
    state.timer.unref();
  };
  server.on('connection', (socket: Socket) => {
    // A connection that sends nothing at all is closed by its idle timer (Node destroys a socket
    // that times out with no request in progress).
    socket.setTimeout(headersMs);
    const state: Idle = { inProgress: 0 };
    idle.set(socket, state);
    deadline(socket, state, headersMs);
    socket.once('close', () => clearTimeout(state.timer));
  });
  server.on('request', (request, response) => {
    const socket = request.socket as Socket;
    // keepAliveTimeout re-arms the idle timer after each answer; until then, none.
    if (socket.timeout === headersMs) socket.setTimeout(0);
    const state = idle.get(socket);
    if (!state) return;
    state.inProgress++;
    clearTimeout(state.timer);
    response.once('close', () => {
      if (--state.inProgress === 0 && !socket.destroyed) deadline(socket, state, keepAliveMs);
    });
  });
}

interface Idle {
  /** Requests of the connection whose headers are in and whose answer has not ended. */
  inProgress: number;
  timer?: NodeJS.Timeout;
}
