import type { Server } from 'node:http';
import type { Socket } from 'node:net';

/**
 * Closes a connection that begins no request for `headersMs` after it opened, or for
 * `keepAliveMs` after its last answer ended, whatever it sends meanwhile. Node's headersTimeout
 * times only a request that has begun, and its keepAliveTimeout is the socket's idle timer,
 * which any byte re-arms: a connection that never sent a byte stayed open for good (slowloris
 * without the drip), and so did one that sent an empty line (CRLF, which HTTP lets a client send
 * between requests) every minute: 500 such connections were still open 20 keep-alive time-outs
 * later, one file descriptor each. No count of connections is capped: a burst of real
 * requests, all from one address, is read and answered.
 *
 * One timer a connection while no request of it is in progress (from its headers until its
 * answer has ended); once a request's headers are in, Node's own timers take over
 * (headersTimeout and requestTimeout for the request).
 */
export function closeIdleConnections(server: Server, { headersMs, keepAliveMs }: { headersMs: number; keepAliveMs: number }): void {
  const idle = new WeakMap<Socket, Idle>();
  const arm = (socket: Socket, state: Idle, ms: number) => {
    state.timer = setTimeout(() => {
      if (state.inProgress === 0) socket.destroy();
    }, ms);
    state.timer.unref();
  };
  server.on('connection', (socket: Socket) => {
    const state: Idle = { inProgress: 0 };
    idle.set(socket, state);
    arm(socket, state, headersMs);
    socket.once('close', () => clearTimeout(state.timer));
  });
  server.on('request', (request, response) => {
    const socket = request.socket as Socket;
    const state = idle.get(socket);
    if (!state) return;
    state.inProgress++;
    clearTimeout(state.timer);
    response.once('close', () => {
      if (--state.inProgress === 0 && !socket.destroyed) arm(socket, state, keepAliveMs);
    });
  });
}

interface Idle {
  /** Requests of the connection whose headers are in and whose answer has not ended. */
  inProgress: number;
  timer?: NodeJS.Timeout;
}
