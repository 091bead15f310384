import { describe, expect, it, vi } from 'vitest';
import Fastify, { type FastifyInstance, type FastifyRequest } from 'fastify';
import type { ResponsesResponse } from '@gateway/contracts';
import { ResponseStore } from '@gateway/database';
import { useTestDatabase } from '@gateway/testkit/test-database';
import { BACKGROUND_HEADER, BackgroundRuns } from './background-runs.ts';

const USER = 7;
const queued = (id: string): ResponsesResponse => ({ id, object: 'response', created_at: 1, status: 'queued', model: 'm', output: [], usage: null, background: true } as ResponsesResponse);

/**
 * A real Fastify app whose POST /v1/responses only claims (as the Responses door does), on a real
 * PostgreSQL: what each request's claim gave, in order. The gateway's own run requests (their
 * header carries a secret) wait for `release()`, so outside requests and cancels come first.
 */
function claimingApp(runs: BackgroundRuns, store: ResponseStore) {
  const claims: { header: string; outcome: string }[] = [];
  let release!: () => void;
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  const app: FastifyInstance = Fastify();
  app.post('/v1/responses', async (request, reply) => {
    const header = String(request.headers[BACKGROUND_HEADER]);
    if (/\.[0-9a-f]{32}$/.test(header)) await gate;
    try {
      const run = await runs.claim(request, USER, store);
      claims.push({ header, outcome: run ? `claimed ${run.id}` : 'not a run' });
      return reply.send({ ok: true });
    } catch (error) {
      claims.push({ header, outcome: 'refused' });
      return reply.code(400).send({ error: { message: (error as Error).message } });
    }
  });
  return { app, claims, release };
}

function start(runs: BackgroundRuns, app: FastifyInstance, store: ResponseStore, id: string): void {
  const caller = { url: '/v1/responses', headers: { authorization: 'Bearer k' }, log: app.log } as unknown as FastifyRequest;
  runs.start(app, caller, store, { id, userId: USER, request: { model: 'm', input: 'hi', stream: true }, inputItems: [], streamed: false });
}

describe('background runs', () => {
  const database = useTestDatabase();

  it('are claimed only by the gateway\'s own request: a client sending the header with the response\'s id is not the run', async () => {
    const store = new ResponseStore(database.db(), 30);
    const runs = new BackgroundRuns();
    const { app, claims, release } = claimingApp(runs, store);
    await store.save(USER, queued('resp_forged'), []);
    start(runs, app, store, 'resp_forged');
    for (const header of ['resp_forged', 'resp_forged.', 'resp_forged.not-its-secret']) {
      await app.inject({ method: 'POST', url: '/v1/responses', headers: { [BACKGROUND_HEADER]: header }, payload: {} });
    }
    expect(claims.map((claim) => claim.outcome)).toEqual(['not a run', 'not a run', 'not a run']);
    release();
    await expect.poll(() => claims.length).toBe(4);
    expect(claims[3]).toMatchObject({ outcome: 'claimed resp_forged', header: expect.stringMatching(/^resp_forged\.[0-9a-f]{32}$/) });
    await app.close();
  });

  it('are never run when cancelled before they are claimed, here or by another gateway in the store', async () => {
    const store = new ResponseStore(database.db(), 30);
    const runs = new BackgroundRuns();
    const { app, claims, release } = claimingApp(runs, store);
    await store.save(USER, queued('resp_cancelled_here'), []);
    await store.save(USER, queued('resp_cancelled_elsewhere'), []);
    start(runs, app, store, 'resp_cancelled_here');
    start(runs, app, store, 'resp_cancelled_elsewhere');
    await store.setStatus('resp_cancelled_here', USER, 'cancelled');
    runs.cancel('resp_cancelled_here');
    await store.setStatus('resp_cancelled_elsewhere', USER, 'cancelled');
    // The runs' own writes, after these two: each refused run stores its failure.
    const writes = vi.spyOn(store, 'setStatus');
    release();
    await expect.poll(() => claims.length).toBe(2);
    expect(claims.map((claim) => claim.outcome)).toEqual(['refused', 'refused']);
    // The refused run's failure does not overwrite its cancel: read once both were written.
    await expect.poll(() => writes.mock.results.length).toBe(2);
    await Promise.allSettled(writes.mock.results.map((result) => result.value));
    expect(await store.status('resp_cancelled_here', USER)).toBe('cancelled');
    expect(await store.status('resp_cancelled_elsewhere', USER)).toBe('cancelled');
    await app.close();
  });
});
