/**
 * How long a job that ended here is remembered: past its lock's lapse and the stalled check that
 * follows (lane-timing.ts), with room for a loaded machine.
 */
const REMEMBERED_MS = 60_000;

/**
 * The jobs this process runs, and those it ended within the last minute, each named by its id
 * and when it was added (`job`). A job's lock lapses when its worker's event loop or Redis stalls
 * past it (seen on a loaded 2-core machine: 2 s of event loop lag and 3 s Redis round trips while
 * 40 MB replies went through), and BullMQ then treats the job as its worker's death: it hands it
 * out again, and fails it after a second lapse. When this process is the one running it, or that
 * has just ended it, neither is true: the job is not run a second time (the new hand-out follows
 * the run, or ends), nor failed as unrun: its run answers it, once.
 */
export class JobsHere {
  private readonly runs = new Map<string, Promise<void>>();
  private readonly ended = new Map<string, number>();

  /** Marks the job running here until `work` settles; resolves or rejects as it does. */
  async run(job: string, work: Promise<void>): Promise<void> {
    this.runs.set(job, work);
    try {
      await work;
    } finally {
      if (this.runs.get(job) === work) this.runs.delete(job);
      this.remember(job);
    }
  }

  /** The job's run in this process, if it runs here. */
  running(job: string): Promise<void> | undefined {
    return this.runs.get(job);
  }

  /** Whether the job runs here, or ended here within the last minute. */
  has(job: string): boolean {
    return this.runs.has(job) || this.ended.has(job);
  }

  private remember(job: string): void {
    const now = Date.now();
    this.ended.delete(job);
    this.ended.set(job, now);
    // Oldest first (a Map keeps its insertion order).
    for (const [name, at] of this.ended) {
      if (now - at < REMEMBERED_MS) break;
      this.ended.delete(name);
    }
  }
}
