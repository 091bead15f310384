/**
 * Every user's batches as administrators see them: the management API's `/api/batch/` and the
 * dashboard's batch page both show this. The gateway reads and cancels them in PostgreSQL, their
 * system of record, as the OpenAI batch routes do; a job on the admin queue would only carry the
 * same query to a worker and back.
 */
import { notFound, type ListBatchesQuery, type Page } from '@gateway/contracts';
import { BatchStore, orUnavailable, type Database, type OwnedBatch } from '@gateway/database';
import type { UserStore } from '@gateway/store';
import { databaseOf } from './batch-api-options.ts';

/** OpenAI's Batch object, its owner's id, and the owner's name (null once the user is deleted). */
export type BatchOverviewItem = OwnedBatch & { username: string | null };

export class BatchOverview {
  private readonly database: Database | undefined;
  private readonly users: UserStore;

  /** Without a database (no DATABASE_URL), every call is a 503. */
  constructor(database: Database | undefined, users: UserStore) {
    this.database = database;
    this.users = users;
  }

  /** A page of batches, newest first, filtered by owner and status. */
  async page(query: ListBatchesQuery): Promise<Page<BatchOverviewItem>> {
    const { items, total } = await orUnavailable(this.store().page({ page: query.p, pageSize: query.page_size, userId: query.user_id, statuses: query.status }));
    return { items: await this.named(items), total, page: query.p, page_size: query.page_size };
  }

  /** Any user's batch; 404 when there is none. */
  async get(id: string): Promise<BatchOverviewItem> {
    return this.found(id, await orUnavailable(this.store().getAny(id)));
  }

  /** Cancels any user's batch as its owner's cancel would (`validating` or `in_progress` become `cancelling`). */
  async cancel(id: string): Promise<BatchOverviewItem> {
    return this.found(id, await orUnavailable(this.store().cancelAny(id)));
  }

  private store(): BatchStore {
    return new BatchStore(databaseOf({ database: this.database }));
  }

  private async found(id: string, batch: OwnedBatch | undefined): Promise<BatchOverviewItem> {
    if (!batch) throw notFound(`no batch with id ${id}`);
    return (await this.named([batch]))[0]!;
  }

  /** The owners' names, read together: one round trip to Redis for a whole page. */
  private async named(batches: OwnedBatch[]): Promise<BatchOverviewItem[]> {
    if (batches.length === 0) return [];
    const names = await this.users.usernames(batches.map((b) => b.user_id));
    return batches.map((batch) => ({ ...batch, username: names.get(batch.user_id) ?? null }));
  }
}
