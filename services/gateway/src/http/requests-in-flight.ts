import type { IncomingMessage, Server } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { INGRESS_STOPPING } from '@gateway/queue';
import { cutShort } from './client-signal.ts';

/**
 * Why a request was ended by its gateway's shutdown, not by its client (`cutShort`'s reason): the
 * job client's own, so its job is cancelled as the gateway's cut and logged 503, not 499.
 */
export const STOPPED = INGRESS_STOPPING;

/**
 * The requests a gateway is answering, for its shutdown: it keeps listening while they finish
 * (a new request is answered 503 with Retry-After, not refused: a closed port is a reset
 * connection to a client that may well retry elsewhere), and only past its deadline ends those
 * left, which a model request does with an error in its own wire format (an error event, for a
 * stream already begun) and a cancel to its job, whose worker charges what was delivered.
 */
export class RequestsInFlight {
  private readonly requests = new Set<IncomingMessage>();

  constructor(server: Server) {
    server.on('request', (request: IncomingMessage, response) => {
      this.requests.add(request);
      response.once('close', () => this.requests.delete(request));
    });
  }

  get count(): number {
    return this.requests.size;
  }

  /**
   * Resolves once the requests in flight now have ended, or at `deadline` after cutting those
   * left (and waiting up to `graceMs` for them to end); resolves with the number cut. Requests
   * that come meanwhile (answered 503 at once) are not waited for: a steady flow of them would
   * otherwise hold every drain to its deadline.
   */
  async drain(deadline: number, graceMs = 1000): Promise<number> {
    const waited = new Set(this.requests);
    const left = () => {
      for (const request of waited) if (!this.requests.has(request)) waited.delete(request);
      return waited.size;
    };
    while (left() > 0 && Date.now() < deadline) await sleep(Math.min(50, Math.max(1, deadline - Date.now())));
    const cut = left();
    if (cut === 0) return 0;
    for (const request of waited) cutShort(request, STOPPED);
    const ended = Date.now() + graceMs;
    while (left() > 0 && Date.now() < ended) await sleep(20);
    return cut;
  }
}
