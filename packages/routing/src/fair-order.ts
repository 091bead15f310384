/** Who waits: its class (batch after interactive) and its tenant (a user, and one of its keys). */
export interface FairTenant {
  batch: boolean;
  userId: number;
  tokenId: number;
}

/** One class's waiters: users in turn order, each with its keys in turn order, each first come, first served. */
type Turns<T> = Map<number, Map<number, T[]>>;

/**
 * The order of one waiting line, fair between tenants: every interactive request before any
 * batch one, and inside a class a round robin between users, then between each user's keys,
 * then first come, first served. A user who joins takes its turn after the users already
 * waiting, so a tenant with 200 waiting delays another's first request by one turn per waiting
 * user, never by its 200. Pure and in memory.
 */
export class FairOrder<T extends FairTenant> {
  private readonly classes: [Turns<T>, Turns<T>] = [new Map(), new Map()];
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
    for (const users of this.classes) {
      const keys = users.values().next().value;
      if (keys) return keys.values().next().value![0];
    }
    return undefined;
  }

  /** Whether anyone of the class, or of a more urgent one, waits. */
  hasWaitingAsUrgentAs(batch: boolean): boolean {
    return this.classes[0].size > 0 || (batch && this.classes[1].size > 0);
  }

  add(entry: T): void {
    if (this.waiting.has(entry)) return;
    this.waiting.add(entry);
    const users = this.classes[entry.batch ? 1 : 0];
    let keys = users.get(entry.userId);
    if (!keys) users.set(entry.userId, (keys = new Map()));
    const queue = keys.get(entry.tokenId);
    if (queue) queue.push(entry);
    else keys.set(entry.tokenId, [entry]);
  }

  /** Takes the entry out; `served`: it had its turn, so its key and its user go to the back of their rounds. */
  remove(entry: T, served = false): boolean {
    if (!this.waiting.delete(entry)) return false;
    const users = this.classes[entry.batch ? 1 : 0];
    const keys = users.get(entry.userId)!;
    const queue = keys.get(entry.tokenId)!;
    queue.splice(queue.indexOf(entry), 1);
    // After a turn, its key and its user go to the back of their rounds (a Map keeps insertion
    // order); one that leaves unserved keeps its place. Emptied ones leave the round.
    if (queue.length === 0) keys.delete(entry.tokenId);
    else if (served) moveToBack(keys, entry.tokenId);
    if (keys.size === 0) users.delete(entry.userId);
    else if (served) moveToBack(users, entry.userId);
    return true;
  }
}

function moveToBack<K, V>(map: Map<K, V>, key: K): void {
  const value = map.get(key)!;
  map.delete(key);
  map.set(key, value);
}
