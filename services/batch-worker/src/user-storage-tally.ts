/**
 * What one user's batches in this process have stored toward FILE_USER_MAX_BYTES, as one count
 * they all check the cap against: what PostgreSQL said the user keeps at the last look of any of
 * them, the results any of them recorded since that look began, and those answered and not yet
 * recorded. Each batch looking on its own saw the others' results only at its next look (every
 * flush, 100 ms): three batches of one user at once passed the cap by more than their windows.
 * The count is exact within this process; batches of the user on other batch workers are seen at
 * each look, as before.
 */
interface UserCount {
  /** What the user kept at the last look. */
  look: number;
  /** Results recorded since that look began (not in it). */
  recordedSinceLook: number;
  /** Results answered and not yet recorded. */
  unrecorded: number;
  /** Batches of the user in this process (the count goes with the last). */
  batches: number;
}

export class UserStorageTally {
  private readonly users = new Map<number, UserCount>();

  /** A batch of the user begins here. */
  join(userId: number): void {
    const user = this.users.get(userId);
    if (user) user.batches++;
    else this.users.set(userId, { look: 0, recordedSinceLook: 0, unrecorded: 0, batches: 1 });
  }

  /** A batch of the user ends here: with its last batch, the user's count goes. */
  leave(userId: number): void {
    const user = this.users.get(userId);
    if (user && --user.batches <= 0) this.users.delete(userId);
  }

  /** What the user keeps by the count: its last look, and every result since. */
  kept(userId: number): number {
    const user = this.users.get(userId);
    return user ? user.look + user.recordedSinceLook + user.unrecorded : 0;
  }

  /** A result answered: its bytes count at once. Returns what the user keeps now. */
  answered(userId: number, bytes: number): number {
    const user = this.users.get(userId);
    if (user) user.unrecorded += bytes;
    return this.kept(userId);
  }

  /** Results recorded in PostgreSQL: counted as recorded until a look that began after them. */
  recorded(userId: number, bytes: number): void {
    const user = this.users.get(userId);
    if (!user) return;
    user.unrecorded = Math.max(0, user.unrecorded - bytes);
    user.recordedSinceLook += bytes;
  }

  /** A look begins: what it will hold of what was recorded by now. */
  lookBegins(userId: number): number {
    return this.users.get(userId)?.recordedSinceLook ?? 0;
  }

  /** A look that began at `mark` (`lookBegins`) found `kept`. Returns what the user keeps now. */
  looked(userId: number, kept: number, mark: number): number {
    const user = this.users.get(userId);
    if (!user) return kept;
    user.look = kept;
    user.recordedSinceLook = Math.max(0, user.recordedSinceLook - mark);
    return this.kept(userId);
  }
}
