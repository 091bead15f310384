/**
 * A lane's slots shared between the tenants (users) whose jobs it runs. Fair ranks order the
 * jobs that wait, but a running job keeps its slot for as long as its upstream takes: 300
 * requests of one tenant to a 30 s upstream held every slot of the completion worker, and
 * another tenant's 20 ms request waited 27 s for one. So a lane with no room takes one more job
 * when a tenant below its share of the slots waits in the queue (`LaneGate`), and a job taken
 * beyond the slots runs only if its tenant is below its share; else it waits for a slot
 * (holding none). The share: the slots split evenly between the tenants at work, the newcomer
 * counted. Pure and in memory: one per lane.
 */
export class TenantSlots {
  readonly slots: number;
  /** User id → its jobs running in the lane. */
  private readonly held = new Map<number, number>();

  constructor(slots: number) {
    this.slots = slots;
  }

  /** The share of a tenant that holds nothing yet, or of `userId`: the slots split between the tenants at work and it. */
  share(userId?: number): number {
    const tenants = this.held.size + (userId !== undefined && this.held.has(userId) ? 0 : 1);
    return Math.max(1, Math.floor(this.slots / tenants));
  }

  /** Whether `userId` holds less than its share (may run a job taken beyond the slots). */
  belowShare(userId: number): boolean {
    return (this.held.get(userId) ?? 0) < this.share(userId);
  }

  /** The tenants at or past a newcomer's share: their jobs waiting in the queue are no reason to take one more. */
  atShare(): number[] {
    const share = this.share();
    return [...this.held].filter(([, n]) => n >= share).map(([user]) => user);
  }

  take(userId: number): void {
    this.held.set(userId, (this.held.get(userId) ?? 0) + 1);
  }

  give(userId: number): void {
    const n = (this.held.get(userId) ?? 0) - 1;
    if (n > 0) this.held.set(userId, n);
    else this.held.delete(userId);
  }
}
