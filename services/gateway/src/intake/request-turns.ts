import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { FairTurns } from './fair-turns.ts';
import { CredentialPlaces } from './credential-places.ts';

/**
 * Requests that Fastify begins per event-loop turn, round robin between credentials: enough that
 * one key's own burst drains as fast as without turns, few enough that another user's request is
 * begun within a turn or two of a burst (docs/benchmarks.md, "Why the tuned constants are what
 * they are").
 */
export const REQUESTS_PER_TURN = 128;

type RequestListener = (request: IncomingMessage, response: ServerResponse) => void;

/**
 * Puts Fastify's handling of each request read by `server` in fair turns (fair-turns.ts), keyed by
 * its credential's place (credential-places.ts: its own once the gateway has accepted it, else
 * one of a few places that made-up and new credentials share).
 *
 * Node parses every request readable in a loop turn and hands each to Fastify at once: its
 * routing, its child logger and its key's authentication ran for all of a burst's thousands in
 * one turn, and another user's request, or the answer Redis had for it, waited out turns of
 * 100 to 400 ms (traced: the gateway's event loop stalled while the burst was read in, in
 * `parserOnHeadersComplete` and Fastify's hooks). Now a turn begins at most REQUESTS_PER_TURN of
 * them; the rest wait, parsed but not yet routed, their bodies unread, and another credential's
 * request is begun in the next round.
 *
 * While a connection has a request waiting, no more of it is read (its socket is paused until
 * its last waiting request is begun). Node stops reading a connection only when its answers
 * back up, and a request not yet begun has none: one connection pipelining bodiless requests
 * was parsed as fast as it sent, 20,000 requests waiting at once while a turn's worth were begun,
 * the gateway's memory growing by hundreds of MB a second and its answers slowing to tens a
 * second.
 *
 * Call before any other `request` listener is added: the first one is Fastify's. A request whose
 * client went away while it waited is not begun.
 */
export function takeRequestsInTurns(server: Server, { perTurn = REQUESTS_PER_TURN, places = new CredentialPlaces() }: { perTurn?: number; places?: CredentialPlaces } = {}): FairTurns<number> {
  const [fastify] = server.listeners('request') as RequestListener[];
  if (!fastify) throw new Error('takeRequestsInTurns: the server has no request listener yet (call it after Fastify made the server)');
  server.removeListener('request', fastify);
  const turns = new FairTurns<number>(perTurn);
  /** Requests of each connection waiting for their turn. */
  const waitingOn = new WeakMap<Socket, number>();
  // Node resumes a connection after each request it parses (and as answers drain, or a body is
  // read): while one of its requests waits, it is paused again at once, before a byte more is read.
  const keepPaused = function (this: Socket) {
    if (waitingOn.has(this)) this.pause();
  };
  server.prependListener('request', (request: IncomingMessage, response: ServerResponse) => {
    const socket = request.socket as Socket;
    let waited = false;
    const begunNow = turns.enter(places.placeOf(request), () => {
      if (waited) {
        const left = waitingOn.get(socket)! - 1;
        if (left > 0) waitingOn.set(socket, left);
        else {
          waitingOn.delete(socket);
          socket.off('resume', keepPaused);
          // Node keeps its own pause (answers backed up) over this resume.
          if (!socket.destroyed) socket.resume();
        }
      }
      if (socket.destroyed) return;
      fastify.call(server, request, response);
    });
    if (!begunNow) {
      waited = true;
      const waiting = waitingOn.get(socket) ?? 0;
      waitingOn.set(socket, waiting + 1);
      if (waiting === 0) socket.on('resume', keepPaused);
      socket.pause();
    }
  });
  return turns;
}
