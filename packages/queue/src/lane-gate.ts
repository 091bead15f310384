import { Worker, type Job, type Processor, type WorkerOptions } from 'bullmq';
import { TenantSlots } from './tenant-slots.ts';

/**
 * How long a job waits for room elsewhere before it stops holding its lane's slot: released at
 * once, a lane holds many more jobs and the requests beside a burst wait longer; after a second,
 * a slow channel's waiters still give their slots up well within one of its turns
 * (docs/benchmarks.md, "Why the tuned constants are what they are").
 */
export const IDLE_AFTER_MS = 1000;

/**
 * Jobs a lane fetches before it begins the first of them. BullMQ fetches one job after another
 * (each a Redis round trip) while its worker has room, and begins none until a fetch comes back
 * empty: a lane with room for 256 fetched 256 before it began any, so a job fetched early waited
 * for the rest: another tenant's request 1.5 s into a 5,000-request burst waited 89 to 132 ms
 * between its fetch and its start (traced). Past this many fetched and not begun, fetches come
 * back empty at once until BullMQ has begun all of them (the measurements: docs/benchmarks.md,
 * "Why the tuned constants are what they are").
 */
export const FETCHED_BEFORE_BEGUN = 8;

/**
 * While a lane has no room, how often it asks whether another tenant below its share waits in
 * the queue (`TenantSlots`): that tenant's first request waits about this long, not a whole turn
 * of the jobs holding the slots. One small read a lane while it is full and jobs wait.
 */
export const SHARE_POLL_MS = 200;

/** How a job's wait for a slot ended (`LaneGate.admit`): it runs, its signal aborted, or the lane is closing. */
export type Admission = 'admitted' | 'left' | 'stopping';

/** Interactive jobs waiting in the queue of users other than `atShare` (`FairShares.waitingBesides`). */
export type OthersWaiting = (atShare: number[]) => Promise<number>;

/**
 * A job waiting for room elsewhere (a full channel's lease, a rate-limited channel's rest) holds
 * none of its worker's concurrency for long: with a BullMQ Worker's plain concurrency, a tenant whose
 * burst waits on one full, slow channel filled every slot of the worker, and another tenant's
 * request to another channel waited a whole slow upstream turn for one (measured: a 10 ms
 * request waited 2.5 to 3 s behind 20 requests for a 1-slot channel of 3 s calls, with 8 slots).
 *
 * `LaneGate` keeps a lane's count of jobs at work: fetched (or about to be) and not waiting.
 * The lane fetches a job only while that count is below its concurrency (`slots`); a job that
 * has waited IDLE_AFTER_MS (`idle`) leaves the count until its wait ends, so the lane fetches
 * another. The lane's BullMQ concurrency is `slots` plus room for jobs that wait (`waiting`),
 * which bounds what it holds.
 * Fetch-next (BullMQ taking the next job as it finishes one) goes through the same count.
 * A lane with no room takes one more job when a tenant below its share of the slots waits in
 * the queue, and a job taken so whose own tenant is at its share waits for a slot (`admit`,
 * `TenantSlots`).
 */
export class LaneGate {
  readonly slots: number;
  /** Jobs at work: fetched and not yet ended, less those waiting (`idle`). */
  private atWork = 0;
  /** Jobs fetched that BullMQ has not yet begun to process. */
  private fetchedUnstarted = 0;
  /** A fetch through the gate is under way (a lane fetches one at a time). */
  private fetching = 0;
  /** FETCHED_BEFORE_BEGUN were reached: no fetch until every job fetched has begun. */
  private beginning = false;
  private shut = false;
  private opened: (() => void) | undefined;
  /** The lane's jobs by tenant. */
  private readonly tenants: TenantSlots;
  private readonly othersWaiting: OthersWaiting | undefined;
  /** Fetches allowed beyond the slots: a tenant below its share waits in the queue. */
  private borrow = 0;
  private polling: NodeJS.Timeout | undefined;
  /** Jobs taken beyond the slots whose tenant was at its share: each waits for a slot (`admit`). */
  private readonly parked: ((how: Admission) => void)[] = [];

  constructor(slots: number, othersWaiting?: OthersWaiting) {
    this.slots = slots;
    this.tenants = new TenantSlots(slots);
    this.othersWaiting = othersWaiting;
  }

  /** Room for one more job at work (`leaving`: jobs at work now that are about to end). */
  hasRoom(leaving = 0): boolean {
    return this.atWork - leaving + this.fetching + this.parked.length < this.slots;
  }

  /**
   * Whether the lane's next fetch may go now ('fetch', counted as under way until `fetched`).
   * BullMQ fetches jobs one after another, and begins to process them only when a fetch comes
   * back empty or waits: while jobs it fetched wait to begin, a lane with no room, or one that
   * reached FETCHED_BEFORE_BEGUN of them and has not yet begun them all, fetches nothing ('skip')
   * rather than waiting, which would hold them. 'wait': no room, nothing to begin; try
   * again when `opening` resolves. 'shut': the lane is closing.
   */
  enter(): 'fetch' | 'skip' | 'wait' | 'shut' {
    if (this.shut) return 'shut';
    if (this.fetchedUnstarted >= FETCHED_BEFORE_BEGUN) this.beginning = true;
    if (this.beginning) {
      if (this.fetchedUnstarted > 0) return 'skip';
      this.beginning = false;
    }
    if (this.hasRoom()) {
      // Room again: a borrow not yet used is not for later, when nobody may wait any more.
      this.borrow = 0;
      this.fetching++;
      return 'fetch';
    }
    if (this.fetchedUnstarted > 0) return 'skip';
    if (this.borrow > 0 && this.fetching === 0) {
      this.borrow--;
      this.fetching++;
      return 'fetch';
    }
    this.watchForOthers();
    return 'wait';
  }

  /**
   * A job of `userId` begins. Taken beyond the slots (for another tenant's sake) while its own
   * tenant holds its share already, it waits for a slot, holding none; `finish` when it ends.
   * It waits no longer once `signal` aborts ('left': its client left, its deadline passed) or
   * the lane closes ('stopping': it is answered at once, not run while the worker drains).
   */
  async admit(userId: number, signal?: AbortSignal): Promise<Admission> {
    if (this.atWork > this.slots && !this.tenants.belowShare(userId)) {
      if (this.shut) return 'stopping';
      if (signal?.aborted) return 'left';
      this.atWork--;
      const how = await new Promise<Admission>((resolve) => {
        const onAbort = () => {
          const at = this.parked.indexOf(settle);
          if (at < 0) return;
          this.parked.splice(at, 1);
          // At work again until BullMQ ends it (`release`), as a job `release` lets go.
          this.atWork++;
          settle('left');
          this.open();
        };
        const settle = (how: Admission) => {
          signal?.removeEventListener('abort', onAbort);
          resolve(how);
        };
        signal?.addEventListener('abort', onAbort, { once: true });
        this.parked.push(settle);
      });
      if (how !== 'admitted') return how;
    }
    this.tenants.take(userId);
    return 'admitted';
  }

  /** The job of `userId` that `admit` let begin ('admitted') has ended. */
  finish(userId: number): void {
    this.tenants.give(userId);
  }

  /**
   * While the lane has no room, asks every SHARE_POLL_MS whether a tenant below its share
   * waits in the queue; if one does, the lane takes one more job beyond its slots.
   */
  private watchForOthers(): void {
    if (!this.othersWaiting || this.polling || this.shut) return;
    const check = async () => {
      if (this.shut || this.hasRoom() || this.parked.length >= FETCHED_BEFORE_BEGUN) {
        this.polling = undefined;
        return;
      }
      const others = await this.othersWaiting!(this.tenants.atShare()).catch(() => 0);
      if (others > 0 && !this.shut) {
        this.polling = undefined;
        this.borrow = 1;
        this.open();
        return;
      }
      this.polling = setTimeout(check, SHARE_POLL_MS);
      this.polling.unref();
    };
    this.polling = setTimeout(check, SHARE_POLL_MS);
    this.polling.unref();
  }

  /** Resolves when the count changes (a job ended, waits, was fetched) or the lane closes. */
  opening(): Promise<void> {
    return new Promise<void>((resolve) => { this.opened = resolve; });
  }

  /** The fetch `enter` let through came back, with a job or none. */
  fetched(job: unknown): void {
    this.fetching--;
    if (job) this.claim();
    else this.open();
  }

  /** A job was fetched: at work from now, though BullMQ has yet to begin it. */
  claim(): void {
    this.atWork++;
    this.fetchedUnstarted++;
    this.open();
  }

  /** BullMQ begins to process a job it fetched. */
  start(): void {
    this.fetchedUnstarted--;
  }

  /** A job at work ended (or waits elsewhere): its slot goes to a job waiting for one first. */
  release(): void {
    this.atWork--;
    if (this.parked.length > 0 && this.atWork < this.slots) {
      this.atWork++;
      this.parked.shift()!('admitted');
    }
    this.open();
  }

  /**
   * `wait` is time the job spends waiting for room elsewhere: once it has waited IDLE_AFTER_MS,
   * it is not at work until the wait ends. A short wait (a lease that frees within a turn of a
   * fast channel) keeps its slot, so a burst on one channel does not make the lane fetch ever
   * more of itself.
   */
  async idle<T>(wait: Promise<T>): Promise<T> {
    let released = false;
    const timer = setTimeout(() => {
      released = true;
      this.release();
    }, IDLE_AFTER_MS);
    try {
      return await wait;
    } finally {
      clearTimeout(timer);
      if (released) this.atWork++;
    }
  }

  /** The lane is closing: a fetch held here goes, and finds the lane closing; a job parked is told 'stopping'. */
  close(): void {
    this.shut = true;
    clearTimeout(this.polling);
    for (const settle of this.parked.splice(0)) {
      this.atWork++;
      settle('stopping');
    }
    this.open();
  }

  private open(): void {
    const opened = this.opened;
    this.opened = undefined;
    opened?.();
  }
}

/**
 * A BullMQ Worker whose fetches go through a `LaneGate`. BullMQ fetches a job by a private
 * method (`_getNextJob`: wait for a job's marker, then take it), which is held here while the
 * lane has no room: held before the wait, so a full lane never takes a marker that an idle
 * worker elsewhere should have woken to. Fetch-next goes through `processJob`, BullMQ's public
 * way to run one job. Checked at construction, so a BullMQ that renames its fetch fails at start.
 */
export class GatedWorker<D> extends Worker<D> {
  readonly gate: LaneGate;

  constructor(name: string, processor: Processor<D>, options: WorkerOptions & { concurrency: number }, waiting: number, othersWaiting?: OthersWaiting) {
    super(name, processor, { ...options, concurrency: options.concurrency + waiting });
    const gate = (this.gate = new LaneGate(options.concurrency, othersWaiting));
    const self = this as unknown as { _getNextJob?: (...args: unknown[]) => Promise<Job<D> | undefined> };
    const fetch = self._getNextJob;
    if (typeof fetch !== 'function') throw new Error("BullMQ's Worker has no _getNextJob: the lane gate cannot hold its fetches (BullMQ changed?)");
    const gated = (...args: unknown[]): Promise<Job<D> | undefined> => {
      const now = gate.enter();
      // Come back empty when the count changes: BullMQ then begins what it has and asks again.
      // Not a fetch after the wait: BullMQ reads whether a fetch waits for a job (its `waiting`)
      // right after starting it, to begin jobs it has meanwhile (a fetch-next's); one started
      // later would block for the whole drainDelay with such a job unstarted, its lock unrenewed.
      if (now === 'wait') return gate.opening().then(() => undefined);
      if (now !== 'fetch') return Promise.resolve(undefined);
      return fetch.apply(this, args).then(
        (job) => { gate.fetched(job); return job; },
        (error: unknown) => { gate.fetched(undefined); throw error; },
      );
    };
    self._getNextJob = gated;
  }

  override async processJob(job: Job<D>, token: string, fetchNext: () => boolean = () => true): Promise<void | Job<D>> {
    this.gate.start();
    let next: void | Job<D> = undefined;
    try {
      // Its next job is fetched only if there is room for it once this one ends.
      next = await super.processJob(job, token, () => fetchNext() && this.gate.hasRoom(1));
      return next;
    } finally {
      this.gate.release();
      if (next) this.gate.claim();
    }
  }

  override async close(force?: boolean): Promise<void> {
    const closing = super.close(force);
    this.gate.close();
    await closing;
  }
}
