import { describe, expect, it } from 'vitest';
import { IntakeWindow } from './intake-window.ts';

const live = () => new AbortController().signal;

describe('an intake window', () => {
  it("lets a user's requests in up to its size, then each as one before it leaves, in order; other users are not held", async () => {
    const window = new IntakeWindow(2);
    const first = await window.enter('1:interactive', live());
    await window.enter('1:interactive', live());
    const order: number[] = [];
    const third = window.enter('1:interactive', live()).then((release) => { order.push(3); return release; });
    const fourth = window.enter('1:interactive', live()).then((release) => { order.push(4); return release; });
    // Another user is let in at once.
    expect(await Promise.race([window.enter('2:interactive', live()).then(() => 'in'), new Promise((r) => setTimeout(() => r('held'), 20))])).toBe('in');
    await new Promise((r) => setTimeout(r, 20));
    expect(order).toEqual([]);
    first();
    first(); // a release given twice counts once
    await third;
    await new Promise((r) => setTimeout(r, 20));
    expect(order).toEqual([3]);
    (await third)();
    await fourth;
    expect(order).toEqual([3, 4]);
  });

  it('passes the place of a request whose client left while it waited straight on, and ends that request', async () => {
    const window = new IntakeWindow(1);
    const first = await window.enter('1:interactive', live());
    const left = new AbortController();
    const waiting = window.enter('1:interactive', left.signal);
    const next = window.enter('1:interactive', live());
    left.abort();
    first();
    await next;
    await expect(waiting).rejects.toMatchObject({ code: 'cancelled' });
  });
});
