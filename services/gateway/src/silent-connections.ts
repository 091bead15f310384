import type { Server } from 'node:http';
import type { Socket } from 'node:net';

/**
 * Closes a connection that sends nothing for `ms` before its first request's headers. Node's
 * headersTimeout times only a request that has begun: a connection that never sends a byte
 * would stay open for good, one file descriptor each (slowloris without the drip). No count of
 * connections is capped: a burst of real requests, all from one address, is read and answered.
 *
 * The socket's own idle timer does it: Node destroys a socket that times out with no request in
 * progress. Once a request's headers are in, Node's own timers take over (headersTimeout and
 * requestTimeout for the request, keepAliveTimeout between requests).
 */
export function closeSilentConnections(server: Server, ms: number): void {
  server.on('connection', (socket: Socket) => socket.setTimeout(ms));
  server.on('request', (request) => {
    const socket = request.socket as Socket;
    // keepAliveTimeout re-arms the same timer after each answer; until then, none.
    if (socket.timeout === ms) socket.setTimeout(0);
  });
}
