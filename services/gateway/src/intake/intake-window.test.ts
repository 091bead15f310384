import { describe, expect, it } from 'vitest';
import { IntakeWindow } from './intake-window.ts';

const live = () => new AbortController().signal;
const later = () => Date.now() + 60_000;
const settledWithin = <T>(promise: Promise<T>, ms = 20) => Promise.race([promise.then(() => 'settled', () => 'settled'), new Promise((r) => setTimeout(() => r('waiting'), ms))]);

describe('an intake window', () => {
  it("lets a user's requests in up to its size, then each as one before it leaves, in order; other owners are not held", async () => {
    const window = new IntakeWindow(2);
    const first = await window.enter('1:interactive', live(), later());
    await window.enter('1:interactive', live(), later());
    const order: number[] = [];
    const third = window.enter('1:interactive', live(), later()).then((release) => { order.push(3); return release; });
    const fourth = window.enter('1:interactive', live(), later()).then((release) => { order.push(4); return release; });
    // Another user, and the same user's batch requests, are let in at once.
    expect(await settledWithin(window.enter('2:interactive', live(), later()))).toBe('settled');
    expect(await settledWithin(window.enter('1:batch', live(), later()))).toBe('settled');
    expect(order).toEqual([]);
    first();
    first(); // a release given twice counts once
    (await third)();
    await fourth;
    expect(order).toEqual([3, 4]);
  });

  it('takes out of the line a waiter whose client leaves (its request cancelled) or whose deadline passes (503), and never lends a place to one', async () => {
    const window = new IntakeWindow(1);
    const first = await window.enter('u', live(), later());
    const left = new AbortController();
    const leaving = window.enter('u', left.signal, later());
    const late = window.enter('u', live(), Date.now() + 30);
    const next = window.enter('u', live(), later());
    left.abort();
    await expect(leaving).rejects.toMatchObject({ code: 'cancelled' });
    await expect(late).rejects.toMatchObject({ status: 503 });
    expect(await settledWithin(next)).toBe('waiting');
    first();
    expect(await settledWithin(next)).toBe('settled');
    // A client already gone takes no place.
    await expect(window.enter('v', AbortSignal.abort(), later())).rejects.toMatchObject({ code: 'cancelled' });
    expect(await settledWithin(window.enter('v', live(), later()))).toBe('settled');
  });

  it('hands a place on through thousands of waiters that left, without a deep stack', async () => {
    const window = new IntakeWindow(1);
    const first = await window.enter('u', live(), later());
    const leaving = Array.from({ length: 20_000 }, () => {
      const controller = new AbortController();
      const entered = window.enter('u', controller.signal, later()).catch(() => 'cancelled');
      return { controller, entered };
    });
    const last = window.enter('u', live(), later());
    for (const waiter of leaving) waiter.controller.abort();
    first();
    expect(await settledWithin(last, 200)).toBe('settled');
    expect(new Set(await Promise.all(leaving.map((w) => w.entered)))).toEqual(new Set(['cancelled']));
  });
});
