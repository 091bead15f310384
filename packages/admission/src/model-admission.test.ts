import { describe, expect } from 'vitest';
import { QueueName } from '@gateway/contracts';
import { createRedis, FairShares, JobClient, ReplyInbox, waitForRedis, type RemovedJob } from '@gateway/queue';
import { issueApiKey, QuotaHolds } from '@gateway/store';
import { storeTest } from '@gateway/testkit/fixtures';
import { KeyRateLimit } from './key-rate-limit.ts';
import { ModelAdmission } from './model-admission.ts';
import type { KeyHolder } from './key-holder.ts';

const test = storeTest();
let seq = 0;

/** A JobClient of its own (a gateway, or a batch worker), with its reply inbox. */
async function ingress(url: string) {
  const redis = createRedis(url, { name: `ingress-${++seq}` });
  await waitForRedis(redis);
  const inbox = new ReplyInbox(`ingress-${seq}`, createRedis(url, { name: `reader-${seq}`, blocking: true }), redis);
  inbox.start();
  const jobs = new JobClient(redis, inbox);
  return { jobs, close: async () => { await inbox.stop(); await jobs.close(); redis.disconnect(); } };
}

describe('model admission', () => {
  test('a job removed unrun by a process that did not admit it gives back its hold and its fair place, once however many remove it', async ({ db }) => {
    const admission = new ModelAdmission({ rateLimit: new KeyRateLimit(db.redis), holds: new QuotaHolds(db.redis), fairShares: new FairShares(db.redis) });
    const holderOf = async (name: string): Promise<KeyHolder> => {
      const user = await db.store.users.create({ username: name, password_hash: 'x' });
      const { token } = await db.store.tokens.create({ user_id: user.id, name: 't', unlimited_quota: true }, issueApiKey().issued);
      // One request of the key in flight at a time: a hold not given back refuses the next.
      return { tokenId: token.id, userId: user.id, group: 'default', models: 'all', rpmLimit: 0, userRpmLimit: 0, priority: 'batch', keyInFlightCap: 1, userInFlightCap: 0, quotaLimited: false, budgetLimited: false };
    };
    const [holder, other] = [await holderOf('giveback'), await holderOf('beside')];
    const admit = (h: KeyHolder) => admission.admit(h.priority, h, QueueName.completion, 10, Date.now() + 60_000, { chargeOnce: true });
    // Another tenant's batch job waits beside, so the line's count shows a place given back twice.
    await admit(other);
    const first = await admit(holder);
    await expect(admit(holder)).rejects.toMatchObject({ status: 429 });
    const batchCount = async () => Number(await db.redis.hget(`gw:{fair:${QueueName.completion}}:line`, 'b:n'));
    expect(await batchCount()).toBe(2);

    // The line's job, queued by the batch's first holder (no worker runs: it waits).
    const sender = await ingress(db.server.url);
    const taker = await ingress(db.server.url);
    try {
      const jobId = `batch-x:1:1`;
      const payload = { caller: { tokenId: holder.tokenId, userId: holder.userId, group: 'default', hold: first.hold }, operation: 'completions', request: { model: 'm', prompt: 'hi' } };
      void sender.jobs.requestText(QueueName.completion, payload, {
        requestId: 'r', jobId, timeoutMs: 60_000, priority: first.priority, tenant: { userId: holder.userId, tokenId: holder.tokenId, listed: first.listed }, hold: first.hold,
      }).catch(() => {});
      await expect.poll(() => taker.jobs.exists(QueueName.completion, jobId)).toBe(true);
      // The batch's new holder withdraws it (a cancel) while an expiry cancels it too: one of them
      // removes it and gives back.
      const removals: RemovedJob[] = [];
      taker.jobs.cancelById(QueueName.completion, jobId, (removed) => removals.push(removed));
      const withdrawn = await taker.jobs.withdrawById(QueueName.completion, jobId);
      if (withdrawn) removals.push(withdrawn);
      await expect.poll(() => removals.length, { timeout: 10_000 }).toBeGreaterThan(0);
      // A window on purpose: a second removal (the other path's) would come in it.
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(removals).toHaveLength(1);
      expect(removals[0]).toMatchObject({ taken: false, data: { hold: first.hold, priority: first.priority } });
      for (const removed of removals) admission.giveBack(QueueName.completion, removed);
      expect(await taker.jobs.exists(QueueName.completion, jobId)).toBe(false);
    } finally {
      await sender.close();
      await taker.close();
    }
    // Its hold is back (the key's next request is admitted), and its place, once: the other
    // tenant's job still counts.
    await expect.poll(batchCount).toBe(1);
    let second: Awaited<ReturnType<typeof admit>> | undefined;
    await expect.poll(async () => (second ??= await admit(holder).catch(() => undefined))).toBeDefined();
  });
});
