import { describe, expect, it } from 'vitest';
import { LogReadTurns } from './log-read-turns.ts';

/** A read that ends when told to. */
function held() {
  let end!: () => void;
  const done = new Promise<void>((resolve) => { end = resolve; });
  return { end, read: () => done };
}

describe('turns on the request log\'s connections', () => {
  const turns = (waitMs = 5_000) => new LogReadTurns({ shared: 2, reserved: 1, waitingPerUser: 1, waitMs: () => waitMs });

  it('runs one read per user at a time, serves the waiting round-robin by user, and keeps a connection for administrators', async () => {
    const log = turns();
    const order: string[] = [];
    const read = (who: string, id: number, gate: ReturnType<typeof held>, admin = false) =>
      log.run({ id, admin }, async () => { order.push(who); await gate.read(); });
    const a1 = held(); const a2 = held(); const b1 = held(); const c1 = held(); const root = held();
    const running = [read('a1', 1, a1), read('a2', 1, a2), read('b1', 2, b1), read('c1', 3, c1)];
    await Promise.resolve();
    // a2 waits behind a1 (one per user) although a connection would be free for it; c1 waits too.
    expect(order).toEqual(['a1', 'b1']);
    // The administrator's own connection, though both shared ones are taken.
    const admin = read('root', 9, root, true);
    await Promise.resolve();
    expect(order).toEqual(['a1', 'b1', 'root']);
    // a1 ends: the round goes on to c (a has had its turn), not to a's second.
    a1.end();
    await expect.poll(() => order).toEqual(['a1', 'b1', 'root', 'c1']);
    b1.end();
    await expect.poll(() => order).toEqual(['a1', 'b1', 'root', 'c1', 'a2']);
    for (const gate of [a2, c1, root]) gate.end();
    await Promise.all([...running, admin]);
  });

  it('refuses a second waiting read of one user at once (429), and tells a wait past its bound the log is busy (503)', async () => {
    const log = turns(50);
    const gates = [held(), held()];
    const running = [log.run({ id: 1, admin: false }, gates[0]!.read), log.run({ id: 2, admin: false }, gates[1]!.read)];
    const waiting = log.run({ id: 1, admin: false }, async () => {});
    await expect(log.run({ id: 1, admin: false }, async () => {})).rejects.toMatchObject({ status: 429 });
    await expect(waiting).rejects.toMatchObject({ status: 503, message: expect.stringMatching(/request log is busy/) });
    await expect(log.run({ id: 3, admin: false }, async () => {})).rejects.toMatchObject({ status: 503, retryAfter: 1 });
    for (const gate of gates) gate.end();
    await Promise.all(running);
    expect(await log.run({ id: 3, admin: false }, async () => 'read')).toBe('read');
  });
});
