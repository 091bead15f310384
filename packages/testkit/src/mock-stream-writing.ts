/** How a mock upstream writes a stream: paced, waiting for a slow reader, broken on purpose after some events. */
import type { ServerResponse } from 'node:http';
import type { MockExchange } from './mock-wire-format.ts';

/** How `sendEvents` sends a stream: a pause between events, and a break after some. */
export interface MockPacing {
  /** Wait this long between two events. */
  intervalMs?: number;
  /** Break the connection (`breakConnection`) after this many events; null or unset: never. */
  breakAfterEvents?: number | null;
}

/** Waits `ms`, or less when `signal` aborts first. */
export const sleepUnlessGone = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    if (ms <= 0 || signal.aborted) return resolve();
    const timer = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => { clearTimeout(timer); resolve(); }, { once: true });
  });

/** Writes `text`; as a real server, waits for a slow reader to take it (TCP backpressure). */
export async function writeOrWait(res: ServerResponse, text: string): Promise<void> {
  if (res.write(text)) return;
  await new Promise<void>((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.once('drain', done);
    res.once('close', done);
  });
}

/**
 * Writes a stream's events as `pacing` says, waiting for a slow reader. Before a planned break
 * each event is waited for until it has left, or the break would eat it. False when the stream
 * broke on purpose or the client left: the caller then writes nothing more.
 */
export async function sendEvents({ res, gone, breakConnection }: MockExchange, events: Iterable<string>, pacing: MockPacing = {}): Promise<boolean> {
  const { intervalMs = 0, breakAfterEvents } = pacing;
  let sent = 0;
  for (const event of events) {
    if (sent > 0 && intervalMs > 0) await sleepUnlessGone(intervalMs, gone);
    if (gone.aborted) return false;
    if (breakAfterEvents != null && sent >= breakAfterEvents) {
      breakConnection();
      return false;
    }
    if (breakAfterEvents != null) await new Promise<void>((resolve) => res.write(event, () => resolve()));
    else await writeOrWait(res, event);
    sent++;
  }
  return !gone.aborted;
}
