/**
 * The key that created a batch, with its and its user's limits as they are now: read at most
 * once a second per key, not for every line, and again at once when the key or its user changes
 * (`forget`, from the store's change feed). A key disabled or deleted, or a user's models
 * narrowed, had the batch's lines admitted for a second more: 700 of them against a fast
 * upstream. A key's expiry is checked at each line, not once a read: a key past its
 * `expired_time` runs no more of its batch's lines (as a live request with it gets 401), where
 * before the batch ran on to its end.
 */
import { keyRecordOf, keyRefusal, type KeyHolder, type KeyRecord } from '@gateway/admission';
import { invalidApiKey } from '@gateway/contracts';
import type { BatchRow } from '@gateway/database';
import type { Store } from '@gateway/store';

/** How long a key's read serves its batch's lines. */
const READ_FOR_MS = 1000;

export class BatchKeys {
  private readonly store: Pick<Store, 'tokens' | 'users'>;
  private readonly read = new Map<number, { at: number; key: Promise<KeyRecord> }>();

  constructor(store: Pick<Store, 'tokens' | 'users'>) {
    this.store = store;
  }

  /** The batch's key's limits now; rejects with 401 for a key that no longer runs lines. */
  async holderOf(batch: Pick<BatchRow, 'token_id'>): Promise<KeyHolder> {
    let cached = this.read.get(batch.token_id);
    if (!cached || Date.now() - cached.at >= READ_FOR_MS) {
      const key = this.readKey(batch.token_id);
      key.catch(() => this.read.delete(batch.token_id));
      if (this.read.size > 10_000) this.read.clear();
      this.read.set(batch.token_id, (cached = { at: Date.now(), key }));
    }
    const { holder, token, user } = await cached.key;
    const refusal = keyRefusal(token, user);
    if (refusal) throw invalidApiKey(`${refusal} (the key that created this batch)`);
    return holder;
  }

  /** A key or user changed: every key is read again. */
  forget(): void {
    this.read.clear();
  }

  private async readKey(tokenId: number): Promise<KeyRecord> {
    const token = await this.store.tokens.get(tokenId);
    if (!token) throw invalidApiKey('the API key that created this batch no longer exists');
    return keyRecordOf(token, await this.store.users.get(token.user_id));
  }
}
