import { describe, expect } from 'vitest';
import { QueueName, type CompletionJobPayload, type QueuedEnvelope } from '@gateway/contracts';
import { FairShares } from '@gateway/queue';
import { issueApiKey, QuotaHolds } from '@gateway/store';
import { storeTest } from '@gateway/testkit/fixtures';
import { KeyRateLimit } from './key-rate-limit.ts';
import { ModelAdmission } from './model-admission.ts';
import type { KeyHolder } from './key-holder.ts';

const test = storeTest();

describe('model admission', () => {
  test('a job removed unrun by someone else gives back, from its own data, the hold and the fair place its admission took', async ({ db }) => {
    const admission = new ModelAdmission({ rateLimit: new KeyRateLimit(db.redis), holds: new QuotaHolds(db.redis), fairShares: new FairShares(db.redis) });
    const user = await db.store.users.create({ username: 'giveback', password_hash: 'x' });
    const { token } = await db.store.tokens.create({ user_id: user.id, name: 't', unlimited_quota: true }, issueApiKey().issued);
    // One request of the key in flight at a time: a hold not given back refuses the next.
    const holder: KeyHolder = {
      tokenId: token.id, userId: user.id, group: 'default', models: 'all', rpmLimit: 0, userRpmLimit: 0,
      priority: 'batch', keyInFlightCap: 1, userInFlightCap: 0, quotaLimited: false,
    };
    const admit = () => admission.admit({}, holder, QueueName.completion, 10, Date.now() + 60_000, { chargeOnce: true });
    const first = await admit();
    expect(first.hold).toEqual(expect.any(String));
    await expect(admit()).rejects.toMatchObject({ status: 429 });
    // The job as its JobClient queued it (a batch line the batch's last holder sent), removed from
    // the queue by a worker that took the batch over.
    const removed: QueuedEnvelope<CompletionJobPayload> = {
      requestId: 'r', replyTo: 'gone', deadline: Date.now() + 60_000, priority: first.priority,
      tenant: { userId: user.id, tokenId: token.id, listed: first.listed },
      payload: { caller: { tokenId: token.id, userId: user.id, group: 'default', hold: first.hold }, operation: 'completions', request: { model: 'm', prompt: 'hi' } },
    };
    admission.giveBack(QueueName.completion, removed as QueuedEnvelope<unknown>);
    // Its hold is back (the next is admitted), and its place in the tenant's line: the next takes
    // the same rank, as the first of its line again.
    let second: Awaited<ReturnType<typeof admit>> | undefined;
    await expect.poll(async () => (second ??= await admit().catch(() => undefined))).toBeDefined();
    expect(second!.priority).toBe(first.priority);
  });
});
