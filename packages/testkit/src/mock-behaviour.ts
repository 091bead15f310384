/**
 * The failure modes and delays a test scripts on a mock upstream, whatever its wire format: the
 * default behaviour and the next ones scripted, and the playing of one (no answer, a delay, a reset
 * connection, a failure status, a given body) before the wire format's own answer.
 */
import type { MockCounters } from './mock-counters.ts';
import type { OpenExchange } from './mock-exchange.ts';
import { sleepUnlessGone } from './mock-stream-writing.ts';
import type { MockBehaviour, MockWireFormat } from './mock-wire-format.ts';

/** The behaviour of every request, and the ones scripted for the next requests, taken in order. */
export class MockScript<B extends MockBehaviour> {
  private behaviour: B;
  private scripted: B[] = [];

  constructor(initial: B) {
    this.behaviour = { ...initial };
  }

  setDefault(behaviour: B): void {
    this.behaviour = { ...behaviour };
  }

  push(...behaviours: B[]): void {
    this.scripted.push(...behaviours);
  }

  /** The next scripted behaviour, or the default when none is left. */
  take(): B {
    return this.scripted.length > 0 ? this.scripted.shift()! : this.behaviour;
  }

  reset(): void {
    this.behaviour = {} as B;
    this.scripted = [];
  }
}

/** Plays `b` on one request counted in flight meanwhile; the wire format answers when `b` fails nothing. */
export async function playBehaviour<B extends MockBehaviour>(exchange: OpenExchange, b: B, format: MockWireFormat<B, unknown>, counters: MockCounters): Promise<void> {
  const { request, res, gone, fail } = exchange;
  counters.inFlight.change(1);
  try {
    if (b.hang) return await new Promise<void>((resolve) => gone.addEventListener('abort', () => resolve(), { once: true }));
    await sleepUnlessGone(b.delayMs ?? 0, gone);
    if (gone.aborted) return;
    if (b.reset) return exchange.breakConnection();
    if (b.status !== undefined && (b.status < 200 || b.status >= 300)) {
      counters.failed++;
      if (b.rawBody !== undefined) return void res.writeHead(b.status, { 'content-type': 'text/html' }).end(b.rawBody);
      return fail(b.status, b.body ?? format.failureBody(b.status, request), b.retryAfter);
    }
    exchange.markServed();
    if (b.okBody !== undefined) return void res.writeHead(200, { 'content-type': 'application/json', ...format.headers?.(request) }).end(JSON.stringify(b.okBody));
    await format.answer(exchange, b);
  } finally {
    counters.inFlight.change(-1);
  }
}
