import type { Redis } from './redis-connection.ts';
import { decodeJobControl } from './job-control.ts';
import { CANCEL_CHANNEL, PAUSE_LAPSE_MS } from './reply-keys.ts';
import { CutByIngress, type IngressCut } from './job-cut-reasons.ts';

/** How a wait for a stream's credit ended. */
export type CreditWait = 'credited' | 'ended' | 'lapsed';
interface CreditWaiter { until: number; lapse: NodeJS.Timeout; settle(how: CreditWait): void }
interface JobCredit { chars: number; waiting: CreditWaiter[] }

/** The abort reason of a job withdrawn before it began: its worker answers `withdrawn`, not nothing. */
export class Withdrawn extends Error {
  constructor() {
    super('withdrawn by its sender before it began');
  }
}

/** A job's abort reason for a control: its withdrawal, its ingress's own cut, or its client gone. */
const abortReason = (withdraw: boolean, why: IngressCut | undefined) =>
  withdraw ? new Withdrawn() : why ? new CutByIngress(why) : new Error('cancelled by the ingress');

/** How long a cancellation for a job this worker does not (yet) run is remembered. */
const REMEMBER_MS = 60_000;
const REMEMBER_MAX = 10_000;

/**
 * A worker process's ear for cancellations: aborts the signal of a job it is running when the
 * ingress that waited for it has given up (client gone, or time-out). A cancellation can arrive
 * while BullMQ is still handing the job to this worker (active, but not yet tracked, so the
 * ingress could not remove it either); it is remembered for a minute, and the job is aborted
 * the moment it is tracked.
 *
 * A withdrawal stops a job only until it has begun (`begin`: its upstream is being called); one
 * begun runs on. It is remembered like a cancellation for a job not yet tracked.
 *
 * It also hears flow control: an ingress whose client reads a stream slower than it comes asks
 * for the job to pause, and to resume once the client's socket has drained. A paused job's next
 * chunk waits (`whenResumed`), so the upstream is read no faster than the client reads. And it
 * hears credit: a stream with a window waits once it is that far ahead of what its ingress has
 * credited (`whenCredited`), however late a pause comes or whether it comes at all.
 */
export class CancelListener {
  private readonly subscriber: Redis;
  private readonly running = new Map<string, AbortController>();
  /** Job id → when its cancellation (or withdrawal) was heard, for jobs not running here (yet). */
  private readonly heard = new Map<string, { at: number; withdraw: boolean; why?: IngressCut }>();
  /** Running jobs that have begun: a withdrawal no longer stops them. */
  private readonly begun = new Set<string>();
  /** Begun jobs whose withdrawal was heard: it stops them if they end their attempt unbegun. */
  private readonly withdrawnWhileBegun = new Set<string>();
  /** Paused jobs → the end of their pause, and the timer that lapses it. */
  private readonly paused = new Map<string, { promise: Promise<void>; resolve: () => void; lapse: NodeJS.Timeout }>();
  /** Running jobs → the characters their ingress has credited, and the sends waiting for more. */
  private readonly credits = new Map<string, JobCredit>();

  constructor(subscriber: Redis) {
    this.subscriber = subscriber;
    subscriber.on('message', (_channel: string, message: string) => {
      const control = decodeJobControl(message);
      const { jobId } = control;
      if (control.kind === 'pause') {
        this.creditOf(jobId)?.waiting.forEach((w) => w.lapse.refresh());
        return this.pause(jobId);
      }
      if (control.kind === 'resume') return this.resume(jobId);
      if (control.kind === 'credit') return this.credit(jobId, control.chars);
      const withdraw = control.kind === 'withdraw';
      const why = control.kind === 'cancel' ? control.why : undefined;
      const running = this.running.get(jobId);
      if (running) {
        if (withdraw && this.begun.has(jobId)) {
          this.withdrawnWhileBegun.add(jobId);
          return;
        }
        this.release(jobId);
        // A second word (the bare cancel after a reasoned one) leaves the first reason standing.
        return running.abort(abortReason(withdraw, why));
      }
      this.remember(jobId, withdraw, why);
    });
  }

  /** Resolves when the job may send its next chunk: at once unless its ingress asked it to pause. */
  whenResumed(jobId: string): Promise<void> | undefined {
    return this.paused.get(jobId)?.promise;
  }

  /**
   * Resolves when the job's ingress has credited at least `until` characters of its stream
   * ('credited'; undefined if it has already), when the job ends ('ended': cancelled, past its
   * deadline: `signal`), or after `lapseMs` without a word from its ingress about the job
   * ('lapsed': a live ingress renews its pause or sends its credit again well within that).
   */
  whenCredited(jobId: string, until: number, signal: AbortSignal, lapseMs: number): Promise<CreditWait> | undefined {
    const credit = this.creditOf(jobId);
    if (!credit || until <= credit.chars || signal.aborted) return undefined;
    const { promise, resolve } = Promise.withResolvers<CreditWait>();
    const waiter: CreditWaiter = {
      until,
      lapse: setTimeout(() => settle('lapsed'), lapseMs),
      settle: (how) => settle(how),
    };
    const onAbort = () => settle('ended');
    const settle = (how: CreditWait) => {
      clearTimeout(waiter.lapse);
      signal.removeEventListener('abort', onAbort);
      credit.waiting = credit.waiting.filter((w) => w !== waiter);
      resolve(how);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    credit.waiting.push(waiter);
    return promise;
  }

  /** The job's credit, for a job running here. */
  private creditOf(jobId: string): JobCredit | undefined {
    if (!this.running.has(jobId)) return undefined;
    let credit = this.credits.get(jobId);
    if (!credit) this.credits.set(jobId, (credit = { chars: 0, waiting: [] }));
    return credit;
  }

  private credit(jobId: string, chars: number): void {
    const credit = this.creditOf(jobId);
    if (!credit) return;
    credit.chars = Math.max(credit.chars, chars);
    for (const waiter of credit.waiting) {
      if (credit.chars >= waiter.until) waiter.settle('credited');
      else waiter.lapse.refresh();
    }
  }

  /** Lets whatever the job waits for go: it is ending. */
  private release(jobId: string): void {
    this.resume(jobId);
    for (const waiter of this.credits.get(jobId)?.waiting ?? []) waiter.settle('ended');
    this.credits.delete(jobId);
  }

  /** Pauses the job, or renews its pause: it lapses PAUSE_LAPSE_MS after the last word from its ingress. */
  private pause(jobId: string): void {
    if (!this.running.has(jobId)) return;
    const renewed = this.paused.get(jobId);
    if (renewed) {
      renewed.lapse.refresh();
      return;
    }
    const { promise, resolve } = Promise.withResolvers<void>();
    const lapse = setTimeout(() => this.resume(jobId), PAUSE_LAPSE_MS);
    this.paused.set(jobId, { promise, lapse, resolve: () => { clearTimeout(lapse); resolve(); } });
  }

  private resume(jobId: string): void {
    this.paused.get(jobId)?.resolve();
    this.paused.delete(jobId);
  }

  private remember(jobId: string, withdraw: boolean, why?: IngressCut): void {
    const now = Date.now();
    // Oldest first (insertion order): drop what is too old, and keep the map bounded.
    for (const [id, { at }] of this.heard) {
      if (now - at < REMEMBER_MS && this.heard.size < REMEMBER_MAX) break;
      this.heard.delete(id);
    }
    // A cancellation heard before stands: a withdrawal does not soften it, nor a bare cancel its reason.
    const before = this.heard.get(jobId);
    this.heard.set(jobId, { at: now, withdraw: withdraw && (before?.withdraw ?? true), why: why ?? before?.why });
  }

  async start(): Promise<void> {
    await this.subscriber.subscribe(CANCEL_CHANNEL);
  }

  track(jobId: string, controller: AbortController): void {
    this.running.set(jobId, controller);
    const heard = this.heard.get(jobId);
    if (heard !== undefined) {
      this.heard.delete(jobId);
      if (Date.now() - heard.at < REMEMBER_MS) controller.abort(abortReason(heard.withdraw, heard.why));
    }
  }

  /**
   * The job has begun (its upstream is being called): a withdrawal no longer stops it, until the
   * returned function says the attempt ended with nothing done (an upstream that failed before
   * answering, another channel to try next): a withdrawal heard meanwhile stops it then.
   */
  begin(jobId: string): () => void {
    if (!this.running.has(jobId)) return () => {};
    this.begun.add(jobId);
    return () => {
      this.begun.delete(jobId);
      const controller = this.running.get(jobId);
      if (!this.withdrawnWhileBegun.delete(jobId) || !controller) return;
      this.release(jobId);
      controller.abort(new Withdrawn());
    };
  }

  untrack(jobId: string): void {
    this.running.delete(jobId);
    this.begun.delete(jobId);
    this.withdrawnWhileBegun.delete(jobId);
    this.release(jobId);
  }

  async close(): Promise<void> {
    this.subscriber.disconnect();
  }
}
