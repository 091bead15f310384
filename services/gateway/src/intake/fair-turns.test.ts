import { describe, expect, it } from 'vitest';
import { FairTurns } from './fair-turns.ts';

const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

describe('fair turns of the event loop', () => {
  it('starts requests at once while the loop is not busy', () => {
    const turns = new FairTurns(4);
    expect([1, 2, 3, 4].map(() => turns.take(1))).toEqual([undefined, undefined, undefined, undefined]);
  });

  it("lets another user's request start in the next round ahead of a burst's thousand", async () => {
    const turns = new FairTurns(4);
    const started: string[] = [];
    // A burst of 1,000 from user 1 read in one loop turn, and then one request of user 2.
    const burst = Array.from({ length: 1000 }, (_, i) => Promise.resolve(turns.take(1)).then(() => started.push(`hog-${i}`)));
    const steady = Promise.resolve(turns.take(2)).then(() => started.push('steady'));
    await nextTurn();
    await nextTurn();
    // The first round's four went at once (hog 0–3); in the next, the steady user's one is among the first two.
    expect(started.slice(0, 4)).toEqual(['hog-0', 'hog-1', 'hog-2', 'hog-3']);
    expect(started.indexOf('steady')).toBeLessThan(6);
    await Promise.all([...burst, steady]);
    expect(started).toHaveLength(1001);
    // Each user's requests start in the order they came.
    const hogs = started.filter((s) => s.startsWith('hog-')).map((s) => Number(s.slice(4)));
    expect(hogs).toEqual([...hogs].sort((a, b) => a - b));
    expect(turns.size).toBe(0);
  });

  it('takes turns between users while each has requests waiting', async () => {
    const turns = new FairTurns(2);
    const started: number[] = [];
    turns.take(9);
    turns.take(9);
    const waits = [1, 1, 1, 2, 2, 2, 3].map((user) => Promise.resolve(turns.take(user)).then(() => started.push(user)));
    await Promise.all(waits);
    expect(started).toEqual([1, 2, 3, 1, 2, 1, 2]);
  });

  it('starts every waiting request at once when told to (a shutdown), still in turn order', () => {
    const turns = new FairTurns(1);
    const started: number[] = [];
    for (const user of [1, 1, 1, 2, 2, 3]) turns.enter(user, () => started.push(user));
    expect(started).toEqual([1]);
    turns.startAll();
    expect(started).toEqual([1, 1, 2, 3, 1, 2]);
    expect(turns.size).toBe(0);
  });
});
