import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { batchEndpoints, GatewayError, openaiErrorBody, type QueueName } from '@gateway/contracts';
import type { KeyHolder, ModelAdmission } from '@gateway/admission';
import { createBatchResultFiles, type BatchRow, type BatchRuns, type Database, type LineResult, type LineToRun } from '@gateway/database';
import { JobClient, ReplyInbox, type Redis } from '@gateway/queue';
import type { Logger } from '@gateway/log';
import { validateLines } from './validate-lines.ts';

export interface BatchFeedDeps {
  runs: BatchRuns;
  database: Database;
  redis: Redis;
  /** A new dedicated connection for a batch's reply inbox (blocking reads). */
  openReader: () => Redis;
  admission: ModelAdmission;
  /** The batch's key holder now (its limits may change while it runs); throws 401 once the key is gone. */
  holderOf: (batch: BatchRow) => Promise<KeyHolder>;
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
}

/** A line's job: named by its batch, line and attempt, so a takeover can follow it. */
const jobIdOf = (batchId: string, line: LineToRun) => `${batchId}:${line.line}:${line.attempt}`;
const SWEEP_EVERY_MS = 3_000;
const STATUS_EVERY_MS = 500;
const FLUSH_EVERY_MS = 100;

const expiredLine = { code: 'batch_expired', message: "This request could not be executed before the batch's completion window expired." };
const cancelledLine = { code: 'batch_cancelled', message: 'This request was not executed because the batch was cancelled.' };

/**
 * Runs one batch that this worker holds: validates it, then keeps up to `window` of its lines in
 * flight as jobs on the model queues (admitted like live requests, at batch priority, fair among
 * tenants), records each line's result in PostgreSQL, and ends the batch (completed, cancelled
 * or expired) with its result files. Lines in flight when a batch is taken over are followed,
 * not sent again: their replies wait in the batch's own reply stream.
 */
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

  constructor(batch: BatchRow, deps: BatchFeedDeps) {
    this.batch = batch;
    this.deps = deps;
    this.queue = batchEndpoints[batch.endpoint]!.queue;
  }

  get id(): string {
    return this.batch.id;
  }

  /** Stops feeding (lease lost, or shutdown); lines in flight go on, for whoever takes the batch. */
  stop(): void {
    this.stopped = true;
    this.wake?.();
  }

  async run(): Promise<void> {
    try {
      if (this.batch.status === 'validating' && !(await this.validate())) return;
      await this.feed();
    } finally {
      for (const entry of this.inFlight.values()) entry.controller.abort();
      await this.flush().catch(() => {});
      await this.inbox?.stop();
      await this.jobs?.close();
    }
  }

  /** Validating → in_progress, or failed with its bad lines named. False when it ended here. */
  private async validate(): Promise<boolean> {
    let holder: KeyHolder;
    try {
      holder = await this.deps.holderOf(this.batch);
    } catch (error) {
      await this.deps.runs.fail(this.batch.id, [{ code: 'invalid_api_key', message: GatewayError.from(error).message, param: null, line: null }]);
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
    this.inbox = new ReplyInbox(this.batch.id, deps.openReader(), deps.redis);
    this.jobs = new JobClient(deps.redis, this.inbox, { shards: deps.shards });
    // Lines sent before a takeover: follow their jobs (registered before the inbox reads, so a
    // reply that came meanwhile is not missed).
    for (const line of await deps.runs.linesInFlight(this.batch.id)) this.follow(line);
    this.inbox.start();

    let status = await deps.runs.statusOf(this.batch.id);
    let exhausted = false;
    let checkedAt = Date.now();
    let sweptAt = Date.now();
    let flushedAt = Date.now();
    while (!this.stopped) {
      const now = Date.now();
      if (now - checkedAt >= STATUS_EVERY_MS) {
        status = await deps.runs.statusOf(this.batch.id);
        checkedAt = now;
      }
      const expired = now >= Number(this.batch.expires_at) * 1000;
      const ending = status === 'cancelling' || expired || status === undefined;
      if (!ending && !exhausted && this.inFlight.size < deps.window) {
        const lines = await deps.runs.nextLines(this.batch.id, deps.window - this.inFlight.size);
        if (lines.length === 0) exhausted = true;
        for (const line of lines) this.send(line);
      }
      if (now - flushedAt >= FLUSH_EVERY_MS || this.results.length >= 256) {
        await this.flush();
        flushedAt = now;
      }
      if (now - sweptAt >= SWEEP_EVERY_MS) {
        await this.sweep();
        sweptAt = now;
      }
      if (this.inFlight.size === 0 && this.results.length === 0 && (exhausted || ending)) {
        if (status === undefined) return;
        if (exhausted && !ending && (await deps.runs.openLines(this.batch.id)) > 0) {
          exhausted = false; // a line given back for another attempt
          continue;
        }
        await this.end(status === 'cancelling' ? 'cancelled' : expired ? 'expired' : 'completed');
        return;
      }
      await new Promise<void>((resolve) => {
        this.wake = resolve;
        setTimeout(resolve, FLUSH_EVERY_MS).unref();
      });
      this.wake = undefined;
    }
  }

  private async end(end: 'completed' | 'cancelled' | 'expired'): Promise<void> {
    const { runs, log } = this.deps;
    if (end === 'completed') await runs.finalizing(this.batch.id);
    else await runs.endOpenLines(this.batch.id, end === 'cancelled' ? cancelledLine : expiredLine);
    const made = await createBatchResultFiles(this.deps.database, this.batch.id, this.batch.user_id);
    await runs.end(this.batch.id, end, made);
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
    const entry: InFlight = { line, controller: new AbortController(), sentAt: Date.now(), queued: true };
    this.inFlight.set(line.line, entry);
    const requestId = randomUUID();
    this.jobs!.follow(jobIdOf(this.batch.id, line), { timeoutMs: this.deps.lineTimeoutMs, signal: entry.controller.signal })
      .then((text) => this.done(entry, { line: line.line, statusCode: 200, requestId, response: text, error: null }))
      .catch((error: unknown) => this.failed(entry, GatewayError.from(error), requestId));
  }

  private async runLine(entry: InFlight): Promise<void> {
    const { deps } = this;
    const { line } = entry;
    const endpoint = batchEndpoints[this.batch.endpoint]!;
    const requestId = randomUUID();
    const deadline = Math.min(Date.now() + deps.lineTimeoutMs, Number(this.batch.expires_at) * 1000);
    try {
      // Validated when the batch was: stored as the schema gave it.
      const request = JSON.parse(line.body) as { model: string };
      const holder = await deps.holderOf(this.batch);
      let admitted;
      for (;;) {
        try {
          admitted = await deps.admission.admit({ 'x-priority': 'batch' }, holder, this.queue, endpoint.worstCase(request), deadline);
          break;
        } catch (error) {
          // The key's rate or in-flight cap: the line waits its turn, as a client would retry.
          const refusal = GatewayError.from(error);
          if (refusal.code !== 'rate_limited' || entry.controller.signal.aborted || Date.now() >= deadline) throw refusal;
          await sleep((refusal.retryAfter ?? 1) * 1000, undefined, { signal: entry.controller.signal }).catch(() => {});
        }
      }
      entry.queued = true;
      entry.sentAt = Date.now();
      const payload = { caller: { tokenId: holder.tokenId, userId: holder.userId, group: holder.group, ...(admitted.hold ? { hold: admitted.hold } : {}) }, request };
      const text = await this.jobs!.requestText(this.queue, payload, {
        requestId,
        jobId: jobIdOf(this.batch.id, line),
        timeoutMs: Math.max(1, deadline - Date.now()),
        signal: entry.controller.signal,
        priority: admitted.priority,
        tenant: { userId: holder.userId, tokenId: holder.tokenId, listed: admitted.listed },
        onUnrun: admitted.unrun,
      });
      this.done(entry, { line: line.line, statusCode: 200, requestId, response: text, error: null });
    } catch (error) {
      this.failed(entry, GatewayError.from(error), requestId);
    }
  }

  private done(entry: InFlight, result: LineResult): void {
    if (this.inFlight.get(entry.line.line) !== entry) return;
    this.inFlight.delete(entry.line.line);
    this.results.push(result);
    this.wake?.();
  }

  /**
   * A line that failed: tried again when another attempt may succeed (its job lost, timed out,
   * Redis away) and attempts are left; otherwise its error is its result.
   */
  private failed(entry: InFlight, error: GatewayError, requestId: string): void {
    if (this.inFlight.get(entry.line.line) !== entry) return;
    const lost = entry.controller.signal.reason === 'lost';
    if (entry.controller.signal.aborted && !lost) return; // stopping: left for the next holder
    const retryable = lost || error.code === 'timeout' || (error.code === 'overloaded' && error.status === 503);
    const expired = Date.now() >= Number(this.batch.expires_at) * 1000;
    if (retryable && !expired && entry.line.attempt < this.deps.attempts) {
      this.inFlight.delete(entry.line.line);
      void this.deps.runs.retry(this.batch.id, entry.line.line).then((attempt) => {
        if (attempt > 0 && !this.stopped) this.send({ ...entry.line, attempt });
      }, () => {});
      this.inFlight.set(entry.line.line, entry); // held until the retry is sent
      return;
    }
    this.done(entry, { line: entry.line.line, statusCode: error.status, requestId, response: JSON.stringify(openaiErrorBody(error)), error: { code: error.code, message: error.message } });
  }

  /** Writes the results gathered; kept for the next flush while PostgreSQL is away. */
  private async flush(): Promise<void> {
    if (this.results.length === 0) return;
    const results = this.results;
    this.results = [];
    try {
      await this.deps.runs.record(this.batch.id, results);
    } catch (error) {
      this.results = results.concat(this.results);
      this.deps.log.warn({ batch: this.batch.id, err: (error as Error).message }, 'batch results not written yet (PostgreSQL); retrying');
      await sleep(1000);
    }
  }

  /** Lines whose job left its queue without a reply (a crash, a Redis restart) are sent again. */
  private async sweep(): Promise<void> {
    const now = Date.now();
    for (const entry of [...this.inFlight.values()]) {
      if (!entry.queued || now - entry.sentAt < SWEEP_EVERY_MS || entry.controller.signal.aborted) continue;
      const exists = await this.jobs!.exists(this.queue, jobIdOf(this.batch.id, entry.line)).catch(() => true);
      if (exists) entry.missing = false;
      else if (entry.missing) entry.controller.abort('lost');
      else entry.missing = true;
    }
  }
}
