import { describe, expect, it } from 'vitest';
import { FairOrder, type FairTenant } from './fair-order.ts';

const entry = (name: string, userId: number, tokenId = userId, batch = false) => ({ name, userId, tokenId, batch });
type Entry = FairTenant & { name: string };

/** Serves the line to the end, in order, as a channel's releases would. */
function serveAll(order: FairOrder<Entry>): string[] {
  const served: string[] = [];
  for (let next = order.first(); next; next = order.first()) {
    order.remove(next, true);
    served.push(next.name);
  }
  return served;
}

describe('FairOrder', () => {
  it("puts another tenant's first request right behind the hog's next, not behind all its waiters", () => {
    const order = new FairOrder<Entry>();
    for (let i = 1; i <= 200; i++) order.add(entry(`hog-${i}`, 1));
    order.remove(order.first()!, true); // hog-1 served
    order.add(entry('steady', 2));
    expect(serveAll(order).slice(0, 2)).toEqual(['steady', 'hog-2']);
  });

  it('takes turns between users, then between the keys of one user', () => {
    const order = new FairOrder<Entry>();
    for (let i = 1; i <= 4; i++) order.add(entry(`a${i}`, 1, 10));
    for (let i = 1; i <= 2; i++) order.add(entry(`b${i}`, 1, 11));
    for (let i = 1; i <= 3; i++) order.add(entry(`c${i}`, 2, 20));
    // Users alternate; user 1's turns alternate between its keys.
    expect(serveAll(order)).toEqual(['a1', 'c1', 'b1', 'c2', 'a2', 'c3', 'b2', 'a3', 'a4']);
    // A user that has taken its turn goes behind one that has not had one yet.
    for (const name of ['x1', 'x2']) order.add(entry(name, 5));
    order.remove(order.first()!, true);
    order.add(entry('y1', 6));
    expect(serveAll(order)).toEqual(['y1', 'x2']);
  });

  it('serves every interactive request before any batch one, whoever is waiting', () => {
    const order = new FairOrder<Entry>();
    order.add(entry('batch-1', 1, 1, true));
    order.add(entry('batch-2', 2, 2, true));
    order.add(entry('interactive-hog-1', 3));
    order.add(entry('interactive-hog-2', 3));
    expect(order.hasWaitingAsUrgentAs(true)).toBe(true);
    expect(serveAll(order)).toEqual(['interactive-hog-1', 'interactive-hog-2', 'batch-1', 'batch-2']);
  });

  it('forgets a tenant that left unserved, and starts its tags over once the line runs empty', () => {
    const order = new FairOrder<Entry>();
    const gone = entry('gone', 1);
    order.add(gone);
    order.add(entry('x', 2));
    expect(order.remove(gone)).toBe(true);
    expect(order.remove(gone)).toBe(false);
    expect(serveAll(order)).toEqual(['x']);
    expect(order.length).toBe(0);
    expect(order.hasWaitingAsUrgentAs(true)).toBe(false);
  });
});
