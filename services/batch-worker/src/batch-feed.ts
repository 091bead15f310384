import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { batchEndpoints, clientCancelled, GatewayError, modelNotAllowed, openaiErrorBody, type QueueName } from '@gateway/contracts';
import { callerOf, cappedForBudget, mayUseModel, type KeyHolder, type ModelAdmission, type UserBodyBudget } from '@gateway/admission';
import { createBatchResultFiles, isDatabaseUnavailable, type BatchEnd, type BatchRow, type BatchRuns, type Database, type LineResult, type LineToRun } from '@gateway/database';
import { isRedisUnavailable, JobClient, redisUnavailableError, ReplyInbox, type Redis, type RemovedJob } from '@gateway/queue';
import type { Logger } from '@gateway/log';
import { GEN_AI, endSpan, traceparentOf } from '@gateway/tracing';
import { validateLines } from './validate-lines.ts';
import { startLineSpan } from './line-span.ts';
import type { UserStorageTally } from './user-storage-tally.ts';

export interface BatchFeedDeps {
  /** The batch worker's lease holder id: lines are taken and retried only under its lease. */
  runner: string;
  /** What each user's batches in this process have stored, one count for all of them (user-storage-tally.ts). */
  storage: UserStorageTally;
  /**
   * How long the batch's reply inbox stays alive to workers after its holder dies: long enough
   * for another to take the batch over, so the jobs in flight are not dropped meanwhile.
   */
  heartbeatTtlMs: number;
  runs: BatchRuns;
  database: Database;
  redis: Redis;
  /** A new dedicated connection for a batch's reply inbox (blocking reads). */
  openReader: () => Redis;
  admission: ModelAdmission;
  /** The batch's key holder now (its limits may change while it runs); throws 401 once the key is gone. */
  holderOf: (batch: BatchRow) => Promise<KeyHolder>;
  /**
   * Bytes one user may keep (FILE_USER_MAX_BYTES): a batch whose user's uploads and batches,
   * its results as they are written included, pass it stops and ends failed. Default no cap.
   */
  userMaxBytes?: number;
  /**
   * The user's bytes of request bodies, shared with its live requests on every gateway
   * (BODY_BUDGET_PER_USER_BYTES): a line's body is held from before its job is added until its
   * job ends, and a line waits while its user's batches would hold more than `limit`.
   */
  bodies?: { budget: UserBodyBudget; limit: number };
  /** Lines in flight at once (BATCH_WINDOW). */
  window: number;
  lineTimeoutMs: number;
  attempts: number;
  shards: number;
  log: Logger;
}

interface InFlight {
  line: LineToRun;
  controller: AbortController;
  sentAt: number;
  /** Its job was added (admission passed): only then can it be missing from its queue. */
  queued: boolean;
  /** Seen missing from its queue once: lost if still missing at the next sweep. */
  missing?: boolean;
  /**
   * Gives back what its admission held, when its job is removed unrun: told the removed job's
   * data, from which a line followed after a takeover (admitted by the batch's last holder) gives
   * back its hold and its fair place.
   */
  unrun?: (removed: RemovedJob) => void;
}

/** Redis away is a 503 to wait out, not an internal error. */
const asGatewayError = (error: unknown) => (isRedisUnavailable(error) ? redisUnavailableError() : GatewayError.from(error));

/** A line's job: named by its batch, line and attempt, so a takeover can follow it. */
const jobIdOf = (batchId: string, line: LineToRun) => `${batchId}:${line.line}:${line.attempt}`;
const SWEEP_EVERY_MS = 3_000;
const STATUS_EVERY_MS = 500;
/** How often a line waiting for its user's body budget asks again. */
const BODY_WAIT_MS = 200;
const FLUSH_EVERY_MS = 100;

const expiredLine = { code: 'batch_expired', message: "This request could not be executed before the batch's completion window expired." };
const cancelledLine = { code: 'batch_cancelled', message: 'This request was not executed because the batch was cancelled.' };
/** The bytes a result keeps in PostgreSQL, as `keptBy` counts them. */
const resultBytes = (result: LineResult) => Buffer.byteLength(result.response ?? '') + (result.error ? Buffer.byteLength(JSON.stringify(result.error)) : 0);

const storageFullLine = { code: 'batch_storage_full', message: "This request was not executed because its user's files and batches hold as many bytes as a user may keep (FILE_USER_MAX_BYTES)." };

/**
 * Runs one batch that this worker holds: validates it, then keeps up to `window` of its lines in
 * flight as jobs on the model queues (admitted like live requests, at batch priority, fair among
 * tenants), records each line's result in PostgreSQL, and ends the batch (completed, cancelled
 * or expired) with its result files. Lines in flight when a batch is taken over are followed,
 * not sent again: their replies wait in the batch's own reply stream.
 */
/** Per user, the tail of this process's lines waiting for room in its body budget (`holdBody`). */
const bodyWaits = new Map<number, Promise<void>>();

export class BatchFeed {
  private batch: BatchRow;
  private readonly deps: BatchFeedDeps;
  private readonly queue: QueueName;
  private readonly inFlight = new Map<number, InFlight>();
  private results: LineResult[] = [];
  private stopped = false;
  private wake: (() => void) | undefined;
  private inbox: ReplyInbox | undefined;
  private jobs: JobClient | undefined;
  private expiring = false;
  /** Cancelled: the lines that have not begun are withdrawn, and none is sent again. */
  private withdrawing = false;
  /** Why the batch stops for its user's storage cap (what its user keeps); set once. */
  private storageFull: string | undefined;
  /** The flush under way: results are written beside the feeding, never in its way. */
  private flushing: Promise<void> | undefined;
  /** The reply stream's last entry read when the last successful flush began. */
  private recordedBefore: string | undefined;

  constructor(batch: BatchRow, deps: BatchFeedDeps) {
    this.batch = batch;
    this.deps = deps;
    this.queue = batchEndpoints[batch.endpoint]!.queue;
  }

  get id(): string {
    return this.batch.id;
  }

  /**
   * Stops feeding (lease lost, or shutdown): lines not yet queued stop at once; queued ones go
   * on, for whoever takes the batch.
   */
  stop(): void {
    this.stopped = true;
    for (const entry of this.inFlight.values()) if (!entry.queued) entry.controller.abort();
    this.wake?.();
  }

  async run(): Promise<void> {
    // Its results count toward its user's bytes as they come, with every batch of the user here.
    this.deps.storage.join(this.batch.user_id);
    try {
      if (this.batch.status === 'validating' && !(await this.validate())) return;
      await this.feed();
    } finally {
      this.stopped = true;
      // Lines not yet queued stop here; queued ones run on, their jobs left for the next holder
      // to follow (their waiters here end with the inbox, and are ignored).
      for (const entry of this.inFlight.values()) if (!entry.queued) entry.controller.abort();
      await this.inbox?.stop();
      await this.flushing;
      await this.flush(false).catch(() => {});
      await this.jobs?.close();
      this.deps.storage.leave(this.batch.user_id);
    }
  }

  /** Validating → in_progress, or failed with its bad lines named. False when it ended here. */
  private async validate(): Promise<boolean> {
    let holder: KeyHolder;
    try {
      holder = await this.deps.holderOf(this.batch);
    } catch (error) {
      // Only a key that is really gone or disabled fails the batch: Redis away is waited out (the
      // batch is taken again), where it failed the batch "invalid_api_key: internal error".
      if (!(error instanceof GatewayError && error.code === 'invalid_api_key')) throw error;
      await this.deps.runs.fail(this.batch.id, [{ code: 'invalid_api_key', message: error.message, param: null, line: null }]);
      return false;
    }
    const outcome = await validateLines(this.deps.runs, this.batch, holder);
    if ('errors' in outcome) {
      await this.deps.runs.fail(this.batch.id, outcome.errors);
      this.deps.log.info({ batch: this.batch.id, errors: outcome.errors.length }, 'batch failed validation');
      return false;
    }
    await this.deps.runs.start(this.batch.id, outcome.total);
    this.deps.log.info({ batch: this.batch.id, lines: outcome.total }, 'batch validated');
    return true;
  }

  private async feed(): Promise<void> {
    const { deps } = this;
    // Replies stay in the batch's stream until their results are in PostgreSQL (see flush): a
    // holder killed before it wrote them leaves them for the next, which reads the stream again.
    this.inbox = new ReplyInbox(this.batch.id, deps.openReader(), deps.redis, { durable: true, heartbeatTtlMs: deps.heartbeatTtlMs });
    this.jobs = new JobClient(deps.redis, this.inbox, { shards: deps.shards });
    // Lines sent before a takeover: follow their jobs (registered before the inbox reads, so a
    // reply that came meanwhile is not missed).
    for (const line of await deps.runs.linesInFlight(this.batch.id)) this.follow(line);
    this.inbox.start();

    let status = await deps.runs.statusOf(this.batch.id);
    // Another batch of the user's may have filled the cap before this one was taken.
    if (status === 'in_progress') await this.checkStorage();
    let exhausted = false;
    /** The last line this feed was given: the next are after it (`BatchRuns.nextLines`). */
    let sentUpTo = 0;
    let checkedAt = Date.now();
    let sweptAt = Date.now();
    let flushedAt = Date.now();
    while (!this.stopped) {
      try {
        const now = Date.now();
        if (now - checkedAt >= STATUS_EVERY_MS) {
          status = await deps.runs.statusOf(this.batch.id);
          checkedAt = now;
        }
        const expired = this.expired(now);
        if (expired && !this.expiring) this.expire();
        if (status === 'cancelling' && !this.withdrawing) this.withdraw();
        const ending = status === 'cancelling' || expired || status === undefined || this.storageFull !== undefined;
        // Topped up a quarter of the window at a time, not line by line: one query for many
        // lines, and the channel's slots stay fed from the three quarters still in flight.
        const free = deps.window - this.inFlight.size;
        if (!ending && !exhausted && (free >= Math.max(1, deps.window >> 2) || (free > 0 && this.inFlight.size === 0))) {
          const lines = await deps.runs.nextLines(this.batch.id, deps.window - this.inFlight.size, deps.runner, sentUpTo);
          if (lines.length === 0) exhausted = true;
          for (const line of lines) this.send(line);
          sentUpTo = lines.at(-1)?.line ?? sentUpTo;
        }
        if (!this.flushing && this.results.length > 0 && (now - flushedAt >= FLUSH_EVERY_MS || this.results.length >= 256)) {
          this.flushing = this.flush().finally(() => {
            this.flushing = undefined;
            this.wake?.();
          });
          flushedAt = now;
        }
        // Past expiry or a cancel, the lines it stopped are looked for often, to end the batch soon.
        const sweepMs = expired || this.withdrawing ? STATUS_EVERY_MS : SWEEP_EVERY_MS;
        if (now - sweptAt >= sweepMs) {
          await this.sweep(sweepMs);
          sweptAt = now;
        }
        if (this.inFlight.size === 0 && this.results.length === 0 && !this.flushing && (exhausted || ending)) {
          if (status === undefined) return;
          if (exhausted && !ending && (await deps.runs.openLines(this.batch.id)) > 0) {
            exhausted = false; // a line given back for another attempt
            // A line marked sent that this feed does not hold (its retry not written while
            // PostgreSQL was away): followed, and sent again once its job is seen missing.
            for (const line of await deps.runs.linesInFlight(this.batch.id)) if (!this.inFlight.has(line.line)) this.follow(line);
            continue;
          }
          await this.end(status === 'cancelling' ? 'cancelled' : expired ? 'expired' : this.storageFull !== undefined ? 'failed' : 'completed');
          return;
        }
      } catch (error) {
        // Anything but an outage is a fault of this feed: the runner gives the batch back.
        if (!isDatabaseUnavailable(error) && !isRedisUnavailable(error)) throw error;
        // PostgreSQL (or Redis) away: the lines in flight run on, their results wait in memory,
        // and feeding resumes when it is back. The runner stops this feed if the lease is lost.
        deps.log.warn({ batch: this.batch.id, reason: (error as Error).message }, 'batch paused: its database or Redis is unavailable; trying again');
        await sleep(1000);
        continue;
      }
      await new Promise<void>((resolve) => {
        this.wake = resolve;
        setTimeout(resolve, FLUSH_EVERY_MS).unref();
      });
      this.wake = undefined;
    }
  }

  private expired(now = Date.now()): boolean {
    return now >= Number(this.batch.expires_at) * 1000;
  }

  /**
   * The completion window is over: what has not run will not. Lines not yet queued stop at
   * once; queued ones are cancelled (removed while they wait, stopped where they run). A line
   * whose job then ends without a reply is left open, to end as `batch_expired`; one whose
   * answer came first anyway (it was charged) is recorded as answered.
   */
  private expire(): void {
    this.expiring = true;
    for (const entry of this.inFlight.values()) {
      if (!entry.queued) entry.controller.abort('expired');
      else this.jobs!.cancelById(this.queue, jobIdOf(this.batch.id, entry.line), entry.unrun);
    }
  }

  /**
   * The batch was cancelled: feeding stops, and the lines that have not begun are withdrawn:
   * those not yet queued at once; queued ones are removed while they wait in the queue, and
   * stopped where a worker holds them waiting for their channel's room (it answers `withdrawn`).
   * A line whose upstream is already being called finishes and is recorded. What is withdrawn is
   * left open, to end as `batch_cancelled`; what it held is given back.
   */
  private withdraw(): void {
    this.withdrawing = true;
    for (const entry of this.inFlight.values()) this.withdrawLine(entry);
  }

  /**
   * Withdraws one line; sent again at each sweep while it is in flight, for a withdrawal that
   * missed its job (its add still under way, a message lost to a reconnect).
   */
  private withdrawLine(entry: InFlight): void {
    if (!entry.queued) {
      entry.controller.abort('withdrawn');
      return;
    }
    void this.jobs!.withdrawById(this.queue, jobIdOf(this.batch.id, entry.line)).then((removed) => {
      if (!removed) return;
      entry.unrun?.(removed);
      if (this.inFlight.get(entry.line.line) !== entry) return;
      entry.controller.abort('withdrawn');
    }, () => { /* Redis away: the next sweep sends it again */ });
  }

  private async end(end: BatchEnd): Promise<void> {
    const { runs, log } = this.deps;
    if (end === 'completed') await runs.finalizing(this.batch.id);
    else await runs.endOpenLines(this.batch.id, end === 'cancelled' ? cancelledLine : end === 'failed' ? storageFullLine : expiredLine);
    const made = await createBatchResultFiles(this.deps.database, this.batch.id, this.batch.user_id);
    await runs.end(this.batch.id, end, made, end === 'failed' ? { code: 'storage_full', message: this.storageFull! } : undefined);
    await this.inbox?.remove().catch(() => {});
    log.info({ batch: this.batch.id, end }, 'batch ended');
  }

  /** Sends a line as a job, and records its answer when it comes. */
  private send(line: LineToRun): void {
    const entry: InFlight = { line, controller: new AbortController(), sentAt: Date.now(), queued: false };
    this.inFlight.set(line.line, entry);
    void this.runLine(entry);
  }

  /** Follows a line's job sent before a takeover. */
  private follow(line: LineToRun): void {
    const entry: InFlight = {
      line, controller: new AbortController(), sentAt: Date.now(), queued: true,
      unrun: (removed) => this.deps.admission.giveBack(this.queue, removed),
    };
    this.inFlight.set(line.line, entry);
    const requestId = randomUUID();
    // Its body is in Redis already, as its job's payload: counted whatever the budget.
    const bytes = Buffer.byteLength(line.body);
    const held = this.deps.bodies?.budget.take(this.batch.user_id, bytes, this.deps.bodies.limit, true).then(() => true, () => false);
    this.jobs!.follow(jobIdOf(this.batch.id, line), { timeoutMs: this.deps.lineTimeoutMs, signal: entry.controller.signal })
      .then((text) => this.done(entry, { line: line.line, statusCode: 200, requestId, response: text, error: null }))
      .catch((error: unknown) => this.failed(entry, GatewayError.from(error), requestId))
      .finally(() => void held?.then((taken) => taken && this.deps.bodies!.budget.give(this.batch.user_id, bytes)));
  }

  private async runLine(entry: InFlight): Promise<void> {
    const { deps } = this;
    const { line } = entry;
    const endpoint = batchEndpoints[this.batch.endpoint]!;
    const requestId = randomUUID();
    const span = startLineSpan(this.batch.id, line.line, endpoint.operation);
    let heldBytes = 0;
    try {
      heldBytes = await this.holdBody(entry);
      // Not cut at the batch's expiry: `expire` cancels what is left then, and a line that was
      // answered at that moment is recorded, not lost.
      const deadline = Date.now() + deps.lineTimeoutMs;
      // Validated when the batch was: stored as the schema gave it.
      const request = JSON.parse(line.body) as { model: string };
      span.setAttribute(GEN_AI.requestModel, request.model);
      let holder: KeyHolder;
      let admitted;
      let sent = request;
      for (;;) {
        if (this.stopped || entry.controller.signal.aborted) throw clientCancelled();
        try {
          holder = await deps.holderOf(this.batch);
          // The models its key and user may use now: an administrator may have narrowed them
          // since the batch was validated.
          if (!mayUseModel(holder, request.model)) throw modelNotAllowed(request.model);
          sent = cappedForBudget(holder, endpoint, request) ?? request;
          admitted = await deps.admission.admit('batch', holder, this.queue, endpoint.worstCase(sent), deadline, { chargeOnce: true, model: request.model });
          break;
        } catch (error) {
          // The key's rate or in-flight cap, or Redis away: the line waits its turn, as a client
          // would retry.
          const refusal = asGatewayError(error);
          if ((refusal.code !== 'rate_limited' && refusal.code !== 'overloaded') || entry.controller.signal.aborted || Date.now() >= deadline) throw refusal;
          await sleep((refusal.retryAfter ?? 1) * 1000, undefined, { signal: entry.controller.signal }).catch(() => {});
        }
      }
      if (this.stopped || entry.controller.signal.aborted) {
        admitted.unrun();
        throw clientCancelled();
      }
      entry.queued = true;
      entry.sentAt = Date.now();
      entry.unrun = admitted.unrun;
      const payload = { caller: { ...callerOf(holder), ...(admitted.hold ? { hold: admitted.hold } : {}) }, operation: endpoint.operation, request: sent };
      const text = await this.jobs!.requestText(this.queue, payload, {
        requestId,
        jobId: jobIdOf(this.batch.id, line),
        followUnsureAdd: true,
        timeoutMs: Math.max(1, deadline - Date.now()),
        signal: entry.controller.signal,
        priority: admitted.priority,
        tenant: { userId: holder.userId, tokenId: holder.tokenId, listed: admitted.listed },
        hold: admitted.hold,
        onUnrun: admitted.unrun,
        payloadChars: line.body.length,
        traceparent: traceparentOf(span),
      });
      span.end();
      this.done(entry, { line: line.line, statusCode: 200, requestId, response: text, error: null });
    } catch (error) {
      const failure = asGatewayError(error);
      endSpan(span, failure.code);
      this.failed(entry, failure, requestId);
    } finally {
      // Its job has ended (or was never added): its payload has left Redis. A line left running
      // for the batch's next holder is counted again by that holder, which follows it.
      if (heldBytes > 0) deps.bodies!.budget.give(this.batch.user_id, heldBytes);
    }
  }

  /**
   * Waits until the line's body fits in its user's body budget beside the user's live requests
   * and other lines, and holds it; resolves with the bytes held (0 without a budget). A line
   * that does not fit at once waits behind the user's other waiting lines of this process, so a
   * full budget is asked once every BODY_WAIT_MS, not once for each of hundreds of waiting lines.
   */
  private async holdBody(entry: InFlight): Promise<number> {
    const bodies = this.deps.bodies;
    if (!bodies) return 0;
    const bytes = Buffer.byteLength(entry.line.body);
    const user = this.batch.user_id;
    if (!bodyWaits.has(user) && await this.tookBody(entry, bytes)) return bytes;
    const turn = (bodyWaits.get(user) ?? Promise.resolve()).then(() => this.waitForBody(entry, bytes));
    const next = turn.then(() => {}, () => {});
    bodyWaits.set(user, next);
    void next.then(() => { if (bodyWaits.get(user) === next) bodyWaits.delete(user); });
    return turn;
  }

  private async waitForBody(entry: InFlight, bytes: number): Promise<number> {
    for (;;) {
      if (await this.tookBody(entry, bytes)) return bytes;
      await sleep(BODY_WAIT_MS, undefined, { signal: entry.controller.signal }).catch(() => {});
    }
  }

  /** Takes the line's bytes when they fit now; Redis away counts as no room yet. */
  private async tookBody(entry: InFlight, bytes: number): Promise<boolean> {
    if (this.stopped || entry.controller.signal.aborted) throw clientCancelled();
    const bodies = this.deps.bodies!;
    try {
      return (await bodies.budget.take(this.batch.user_id, bytes, bodies.limit)) === undefined;
    } catch (error) {
      if (!isRedisUnavailable(error)) throw error;
      return false;
    }
  }

  private done(entry: InFlight, result: LineResult): void {
    if (this.inFlight.get(entry.line.line) !== entry) return;
    this.inFlight.delete(entry.line.line);
    this.results.push(result);
    // It stops as soon as its user passes the cap, not only at its next look (a flush may record hundreds).
    const kept = this.deps.storage.answered(this.batch.user_id, resultBytes(result));
    const cap = this.deps.userMaxBytes;
    if (cap !== undefined && kept > cap) this.stopForStorage(kept, cap);
    this.wake?.();
  }

  /**
   * A line that failed: tried again when another attempt may succeed (its job lost, timed out,
   * Redis away) and attempts are left; otherwise its error is its result.
   */
  private failed(entry: InFlight, error: GatewayError, requestId: string): void {
    if (this.inFlight.get(entry.line.line) !== entry) return;
    if (this.stopped) return; // stopping: left for the next holder
    const reason: unknown = entry.controller.signal.reason;
    const lost = reason === 'lost';
    const expired = this.expired();
    if (reason === 'expired' || (lost && expired)) {
      // Stopped or cancelled unrun at the batch's expiry: left open, it ends as `batch_expired`.
      this.inFlight.delete(entry.line.line);
      this.wake?.();
      return;
    }
    if (reason === 'withdrawn' || error.code === 'withdrawn' || (lost && this.withdrawing)) {
      // Withdrawn unrun when the batch was cancelled: left open, it ends as `batch_cancelled`.
      this.inFlight.delete(entry.line.line);
      this.wake?.();
      return;
    }
    const retryable = lost || error.code === 'timeout' || (error.code === 'overloaded' && error.status === 503);
    if (retryable && !expired && entry.line.attempt < this.deps.attempts) {
      // Held in flight until its next attempt is written and sent.
      void this.deps.runs.retry(this.batch.id, entry.line.line, this.deps.runner).then((attempt) => {
        if (this.inFlight.get(entry.line.line) === entry) this.inFlight.delete(entry.line.line);
        // Not after the window closed: the line is left open, to end as expired.
        if (attempt > 0 && !this.stopped && !this.expiring && !this.withdrawing) this.send({ ...entry.line, attempt });
        else this.wake?.();
      }, () => {
        // Not written: the line stays marked sent, and is found again before the batch ends.
        if (this.inFlight.get(entry.line.line) === entry) this.inFlight.delete(entry.line.line);
        this.wake?.();
      });
      return;
    }
    this.done(entry, { line: entry.line.line, statusCode: error.status, requestId, response: JSON.stringify(openaiErrorBody(error)), error: { code: error.code, message: error.message } });
  }

  /**
   * Writes the results gathered; kept for the next flush while PostgreSQL is away. Then the
   * replies read before the previous successful flush began leave the batch's reply stream:
   * their results were handed over long since (a reply's chain to `done` may take a few
   * microtask turns, never an I/O round trip), so they are in this flush or an earlier one.
   * `trim` false: a feed that is stopping leaves the stream to the batch's next holder.
   */
  private async flush(trim = true): Promise<void> {
    if (this.results.length === 0) return;
    const read = this.inbox?.lastRead;
    const results = this.results;
    this.results = [];
    try {
      await this.deps.runs.record(this.batch.id, results);
      this.deps.storage.recorded(this.batch.user_id, results.reduce((sum, result) => sum + resultBytes(result), 0));
      if (trim && this.recordedBefore) await this.inbox!.trimBefore(this.recordedBefore).catch(() => {});
      this.recordedBefore = read;
    } catch (error) {
      this.results = results.concat(this.results);
      this.deps.log.warn({ batch: this.batch.id, reason: (error as Error).message }, 'batch results not written yet (PostgreSQL); retrying');
      await sleep(1000);
      return;
    }
    if (trim) await this.checkStorage().catch(() => { /* PostgreSQL away: checked at the next flush */ });
  }

  /**
   * Stops the batch once its user keeps more than FILE_USER_MAX_BYTES (its results, and other
   * batches', are counted as they are written): its lines not yet begun are withdrawn, those
   * being answered are recorded, and it ends failed, with the results it has in its files.
   */
  private async checkStorage(): Promise<void> {
    const cap = this.deps.userMaxBytes;
    if (cap === undefined || this.storageFull !== undefined || this.stopped) return;
    const user = this.batch.user_id;
    // What was recorded by now is in the look; what is recorded or answered meanwhile is not.
    const mark = this.deps.storage.lookBegins(user);
    const kept = this.deps.storage.looked(user, await this.deps.runs.keptBy(user), mark);
    if (kept > cap) this.stopForStorage(kept, cap);
  }

  private stopForStorage(kept: number, cap: number): void {
    if (this.storageFull !== undefined || this.stopped) return;
    this.storageFull = `the batch was stopped: its user's files and batches (their results included) hold ${kept} bytes, more than the ${cap} a user may keep (FILE_USER_MAX_BYTES); the lines already answered are in its output and error files, delete files or ended batches' results to run more`;
    this.deps.log.info({ batch: this.batch.id, kept, cap }, 'batch stopped: its user passed the storage cap');
    if (!this.withdrawing) this.withdraw();
    this.wake?.();
  }

  /** Lines whose job left its queue without a reply (a crash, a Redis restart) are sent again. */
  private async sweep(minAgeMs: number): Promise<void> {
    const now = Date.now();
    const due = [...this.inFlight.values()].filter((entry) => entry.queued && now - entry.sentAt >= minAgeMs && !entry.controller.signal.aborted);
    if (this.withdrawing) for (const entry of due) this.withdrawLine(entry);
    await Promise.all(due.map(async (entry) => {
      const exists = await this.jobs!.exists(this.queue, jobIdOf(this.batch.id, entry.line)).catch(() => true);
      if (exists) entry.missing = false;
      else if (entry.missing) entry.controller.abort('lost');
      else entry.missing = true;
    }));
  }
}
