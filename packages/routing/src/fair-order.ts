/** Who waits: its class (batch after interactive) and its tenant (a user, and one of its keys). */
export interface FairTenant {
  batch: boolean;
  userId: number;
  tokenId: number;
}

/** One user's waiters: its keys in turn order, each first come, first served. */
type Keys<T> = Map<number, T[]>;

/**
 * One class's users in turn order: those that have not had a turn since they began to wait
 * (`fresh`) before those that have (`rest`), as fq_codel serves new flows before old ones.
 */
interface Turns<T> {
  fresh: Map<number, Keys<T>>;
  rest: Map<number, Keys<T>>;
}

const turns = <T>(): Turns<T> => ({ fresh: new Map(), rest: new Map() });

/**
 * The order of one waiting line, fair between tenants: every interactive request before any
 * batch one, and inside a class a round robin between users, then between each user's keys,
 * then first come, first served. A user who begins to wait has its first turn before the users
 * already taking turns (fq_codel's new flows), so a tenant with 200 waiting delays another's
 * first request by no turn of its own: the next lease is the newcomer's. Pure and in memory.
 */
export class FairOrder<T extends FairTenant> {
  private readonly classes: [Turns<T>, Turns<T>] = [turns(), turns()];
  private readonly waiting = new Set<T>();

  get length(): number {
    return this.waiting.size;
  }

  /** Every waiter (in no particular order). */
  [Symbol.iterator](): Iterator<T> {
    return this.waiting[Symbol.iterator]();
  }

  /** Whose turn it is. */
  first(): T | undefined {
    for (const { fresh, rest } of this.classes) {
      const keys = fresh.values().next().value ?? rest.values().next().value;
      if (keys) return keys.values().next().value![0];
    }
    return undefined;
  }

  /** Whether anyone of the class, or of a more urgent one, waits. */
  hasWaitingAsUrgentAs(batch: boolean): boolean {
    const waits = (t: Turns<T>) => t.fresh.size + t.rest.size > 0;
    return waits(this.classes[0]) || (batch && waits(this.classes[1]));
  }

  add(entry: T): void {
    if (this.waiting.has(entry)) return;
    this.waiting.add(entry);
    const { fresh, rest } = this.classes[entry.batch ? 1 : 0];
    let keys = fresh.get(entry.userId) ?? rest.get(entry.userId);
    if (!keys) fresh.set(entry.userId, (keys = new Map()));
    const queue = keys.get(entry.tokenId);
    if (queue) queue.push(entry);
    else keys.set(entry.tokenId, [entry]);
  }

  /** Takes the entry out; `served`: it had its turn, so its key and its user go to the back of their rounds. */
  remove(entry: T, served = false): boolean {
    if (!this.waiting.delete(entry)) return false;
    const { fresh, rest } = this.classes[entry.batch ? 1 : 0];
    const users = fresh.has(entry.userId) ? fresh : rest;
    const keys = users.get(entry.userId)!;
    const queue = keys.get(entry.tokenId)!;
    queue.splice(queue.indexOf(entry), 1);
    // After a turn, its key and its user go to the back of their rounds (a Map keeps insertion
    // order); one that leaves unserved keeps its place. Emptied ones leave the round.
    if (queue.length === 0) keys.delete(entry.tokenId);
    else if (served) moveToBack(keys, entry.tokenId);
    if (keys.size === 0) users.delete(entry.userId);
    else if (served) {
      // After its turn a user waits behind the others taking turns.
      users.delete(entry.userId);
      rest.set(entry.userId, keys);
    }
    return true;
  }
}

function moveToBack<K, V>(map: Map<K, V>, key: K): void {
  const value = map.get(key)!;
  map.delete(key);
  map.set(key, value);
}
