/** What a mock upstream counts: requests arrived, answered, failed on purpose, left by their client, and in flight. */

/** The counters a mock upstream exposes; `reset` forgets them (but not the requests still in flight). */
export class MockCounters {
  arrived = 0;
  completed = 0;
  /** Failed on purpose: a scripted failure status, a reset, a stream broken mid-way. */
  failed = 0;
  /** Left by their client before the answer was complete. */
  aborted = 0;
  /** Refused 429 past the concurrency limit. */
  overLimit = 0;
  readonly inFlight = new InFlightCounts();

  reset(): void {
    this.arrived = this.completed = this.failed = this.aborted = this.overLimit = 0;
    this.inFlight.reset();
  }
}

/** Requests in flight: now, at most, and on average over the time since the first. */
export class InFlightCounts {
  inFlight = 0;
  maxInFlight = 0;
  // The integral of inFlight over time, and the span it covers.
  private inFlightMs = 0;
  private firstTakenAt = 0;
  private lastChangeAt = 0;

  change(by: number): void {
    const now = performance.now();
    if (this.firstTakenAt === 0) this.firstTakenAt = this.lastChangeAt = now;
    this.inFlightMs += this.inFlight * (now - this.lastChangeAt);
    this.lastChangeAt = now;
    this.inFlight += by;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
  }

  get mean(): number {
    return this.lastChangeAt > this.firstTakenAt ? this.inFlightMs / (this.lastChangeAt - this.firstTakenAt) : 0;
  }

  reset(): void {
    this.maxInFlight = this.inFlight;
    this.inFlightMs = this.firstTakenAt = this.lastChangeAt = 0;
  }
}
