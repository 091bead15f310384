/**
 * How long a job that ended here is remembered: past its lock's lapse and the stalled check that
 * follows (lane-timing.ts), with room for a loaded machine.
 */
const REMEMBERED_MS = 60_000;

/**
 * The jobs this process runs, and those it ended within the last minute. A job's lock lapses when
 * its worker's event loop or Redis stalls past it (seen on a loaded 2-core machine: 2 s of event
 * loop lag and 3 s Redis round trips while 40 MB replies went through), and BullMQ then treats
 * the job as its worker's death: it hands it out again, and fails it after a second lapse. When
 * this process is the one still running it, neither is true: the job is not run a second time
 * (`running`: the new run follows the first), nor failed as unrun (`has`): its run answers it,
 * once.
 */
export class JobsHere {
  private readonly runs = new Map<string, Promise<void>>();
  private readonly ended = new Map<string, number>();

  /** Marks the job running here until `run` settles; resolves or rejects as it does. */
  async run(jobId: string, run: Promise<void>): Promise<void> {
    this.runs.set(jobId, run);
    try {
      await run;
    } finally {
      if (this.runs.get(jobId) === run) this.runs.delete(jobId);
      this.remember(jobId);
    }
  }

  /** The run of the job in this process, if it runs here. */
  running(jobId: string): Promise<void> | undefined {
    return this.runs.get(jobId);
  }

  /** Whether the job runs here, or ended here within the last minute. */
  has(jobId: string): boolean {
    return this.runs.has(jobId) || this.ended.has(jobId);
  }

  private remember(jobId: string): void {
    const now = Date.now();
    this.ended.delete(jobId);
    this.ended.set(jobId, now);
    // Oldest first (a Map keeps its insertion order).
    for (const [id, at] of this.ended) {
      if (now - at < REMEMBERED_MS) break;
      this.ended.delete(id);
    }
  }
}
