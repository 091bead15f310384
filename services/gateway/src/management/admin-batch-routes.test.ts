/**
 * The administrators' batch routes and the dashboard's batch page on a gateway without
 * DATABASE_URL, in process (`app.inject`): an administrator gets the 503 the Files and Batch
 * APIs give, in each route's format; anyone else is turned away first, as on every admin route.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { Role } from '@gateway/contracts';
import { newAccessToken } from '@gateway/store';
import { useTestGateway } from '../../test/test-gateway.ts';

const gateway = useTestGateway();
const admin = newAccessToken();
const common = newAccessToken();

beforeAll(async () => {
  const ops = await gateway.store.users.create({ username: 'ops-in-process', password_hash: 'x', role: Role.admin });
  await gateway.store.users.setAccessToken(ops.id, admin);
  const user = await gateway.store.users.create({ username: 'user-in-process', password_hash: 'x' });
  await gateway.store.users.setAccessToken(user.id, common);
});

const call = (method: 'GET' | 'POST', url: string, token?: string) =>
  gateway.app.inject({ method, url, headers: token ? { authorization: `Bearer ${token}` } : {} });

describe('batches for administrators, without PostgreSQL', () => {
  it('answers an administrator 503 in the envelope, on every batch route', async () => {
    for (const [method, url] of [['GET', '/api/batch/'], ['GET', '/api/batch/batch_abc'], ['POST', '/api/batch/batch_abc/cancel']] as const) {
      const answer = await call(method, url, admin);
      expect(answer.statusCode, url).toBe(503);
      expect(answer.json()).toEqual({ success: false, message: expect.stringContaining('DATABASE_URL') });
    }
  });

  it('turns away a common user (403) and a caller without credentials (401) before that', async () => {
    expect((await call('GET', '/api/batch/', common)).statusCode).toBe(403);
    expect((await call('POST', '/api/batch/batch_abc/cancel', common)).json()).toEqual({ success: false, message: expect.any(String) });
    expect((await call('GET', '/api/batch/')).statusCode).toBe(401);
  });

  it('refuses bad filters with 400, naming the field', async () => {
    const answer = await call('GET', '/api/batch/?status=running', admin);
    expect(answer.statusCode).toBe(400);
    expect(answer.json().message).toMatch(/status/);
    expect((await call('GET', '/api/batch/?page_size=101', admin)).statusCode).toBe(400);
  });

  it('shows the dashboard batch page with the reason instead of the table', async () => {
    const page = await call('GET', '/admin/queues/batches', admin);
    expect(page.statusCode).toBe(503);
    expect(page.headers['content-type']).toMatch(/text\/html/);
    expect(page.body).toContain('DATABASE_URL');
    expect((await call('GET', '/admin/queues/batches', common)).statusCode).toBe(403);
  });
});
