/**
 * Limits and roles (issue 10): where a channel may point, what a key's owner may change, that a
 * root always remains, which usernames exist, and how much of a job the dashboard shows. Real
 * gateway and worker processes.
 */
import { Queue } from 'bullmq';
import { describe, expect } from 'vitest';
import { QUEUE_PREFIX, QueueName } from '@gateway/contracts';
import { postJson, type ServiceProcess } from '@gateway/testkit';
import { stackTest } from '@gateway/testkit/fixtures';

const it = stackTest({ workers: ['completion-worker'], env: { REQUEST_TIMEOUT_MS: '10000' } });

/** A second gateway with the stricter settings, for the whole file: several tests compare its answers with the default one's. */
let strict: ServiceProcess;

it.beforeAll(async ({ stack }) => {
  strict = await stack.add('gateway', { CHANNEL_ALLOW_PRIVATE_ADDRESSES: 'false', DASHBOARD_PAYLOADS: 'none' });
});

/** A channel's fields as the management API takes them: the `channel` fixture would make it, and most of these are to be refused. */
const channelBody = (fields: Record<string, unknown>) => ({ name: 'c', type: 'openai', key: 'sk-upstream-key', base_url: 'http://127.0.0.1:9', models: ['m'], ...fields });

describe("a channel's base_url and key", () => {
  it('refuses link-local and metadata addresses, the gateway itself and its Redis, and URL parts that leak or get mangled', async ({ stack }) => {
    const redisPort = new URL(stack.redis.url).port;
    const gatewayPort = new URL(stack.gateway.url).port;
    const refused: [string, RegExp][] = [
      ['http://169.254.169.254/latest', /link-local/],
      ['http://[fe80::1]:8080', /link-local/],
      ['http://metadata.google.internal', /metadata/],
      [`http://127.0.0.1:${redisPort}`, /own Redis or listening address/],
      [`http://localhost:${gatewayPort}`, /own Redis or listening address/],
      ['http://127.0.0.1:9/v1?api-version=1', /query/],
      ['http://127.0.0.1:9/#frag', /fragment/],
      ['http://user:pass@127.0.0.1:9', /user name or password/],
    ];
    for (const [base_url, why] of refused) {
      const answer = await stack.admin('POST', '/api/channel/', channelBody({ base_url }));
      expect(answer.status, base_url).toBe(400);
      expect(answer.body.message, base_url).toMatch(why);
    }
    const crlf = await stack.admin('POST', '/api/channel/', channelBody({ key: 'sk-a\r\nX-Injected: 1' }));
    expect(crlf.status).toBe(400);
    expect(crlf.body.message).toMatch(/key.*control characters/);
  });

  it('allows private and loopback addresses by default, and refuses them when told to', async ({ stack }) => {
    expect((await stack.admin('POST', '/api/channel/', channelBody({ base_url: 'http://10.1.2.3:8000' }))).status).toBe(200);
    const answer = await fetch(`${strict.url}/api/channel/`, {
      method: 'POST', headers: { authorization: `Bearer ${stack.adminToken}`, 'content-type': 'application/json' }, body: JSON.stringify(channelBody({ base_url: 'http://10.1.2.3:8000' })),
    });
    expect(answer.status).toBe(400);
    expect(((await answer.json()) as any).message).toMatch(/private or loopback/);
  });

  it('needs the key again to change base_url or type', async ({ stack }) => {
    const created = (await stack.admin('POST', '/api/channel/', channelBody({}))).body.data;
    const moved = await stack.admin('PUT', '/api/channel/', { id: created.id, base_url: 'http://127.0.0.1:10' });
    expect(moved.status).toBe(400);
    expect(moved.body.message).toMatch(/key: changing base_url or type needs the key/);
    expect((await stack.admin('PUT', '/api/channel/', { id: created.id, type: 'gemini' })).status).toBe(400);
    expect((await stack.admin('PUT', '/api/channel/', { id: created.id, base_url: 'http://127.0.0.1:10', key: 'sk-again' })).status).toBe(200);
    expect((await stack.admin('PUT', '/api/channel/', { id: created.id, weight: 4 })).status).toBe(200);
  });

  it('cannot make a request loop through a channel that points at a gateway', async ({ stack, apiKey }) => {
    await stack.admin('POST', '/api/channel/', channelBody({ name: 'loop', base_url: strict.url, models: ['loop-model'], timeout_ms: 5000 }));
    const { key } = await apiKey();
    const answer = await postJson(`${stack.gateway.url}/v1/completions`, { model: 'loop-model', prompt: 'x' }, { authorization: `Bearer ${key}` });
    expect(answer.status).toBe(502);
    // The strict gateway logs the refused hop through an asynchronous log destination.
    const refusedHops = () => strict.logs.filter((l) => l.msg === 'request' && l.status === 508);
    await expect.poll(() => refusedHops().length).toBe(1);
  });
});

describe("a key's owner", () => {
  it('may tighten its own key but not undo what an administrator set, nor raise it', async ({ stack }) => {
    const user = (await stack.admin('POST', '/api/user/', { username: 'owner', password: 'owner-password' })).body.data;
    const token = (await (await fetch(`${stack.gateway.url}/api/user/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'owner', password: 'owner-password' }) })).json() as any).data.access_token;
    const key = (await stack.admin('POST', '/api/token/', { name: 'k', user_id: user.id, remain_quota: 1000, rpm_limit: 10, models: ['a', 'b'], expired_time: Math.floor(Date.now() / 1000) + 3600 })).body.data;
    expect((await stack.admin('PUT', '/api/token/', { id: key.id, status: 2 })).status).toBe(200);

    const asOwner = (changes: Record<string, unknown>) => stack.admin('PUT', '/api/token/', { id: key.id, ...changes }, token);
    for (const changes of [{ status: 1 }, { rpm_limit: 0 }, { rpm_limit: 100 }, { models: [] }, { models: ['a', 'c'] }, { unlimited_quota: true }, { remain_quota: 10_000_000 }, { expired_time: -1 }]) {
      const answer = await asOwner(changes);
      expect(answer.status, JSON.stringify(changes)).toBe(403);
      expect(answer.body.message).toMatch(/only an administrator may/);
    }
    for (const changes of [{ name: 'renamed' }, { remain_quota: 500 }, { rpm_limit: 5 }, { models: ['a'] }, { priority: 'batch' }]) {
      expect((await asOwner(changes)).status, JSON.stringify(changes)).toBe(200);
    }
    expect((await stack.admin('PUT', '/api/token/', { id: key.id, status: 1, rpm_limit: 0 })).status).toBe(200);
  });
});

describe('root', () => {
  it('cannot demote, disable or delete the last root', async ({ stack }) => {
    const demote = await stack.admin('PUT', '/api/user/', { id: 1, role: 10 });
    expect(demote.status).toBe(409);
    expect(demote.body.message).toMatch(/last enabled root/);
    expect((await stack.admin('PUT', '/api/user/', { id: 1, status: 2 })).status).toBe(400);
    expect((await stack.admin('GET', '/api/user/self')).body.data).toMatchObject({ role: 100, status: 1 });
  });
});

describe('usernames', () => {
  it('refuse control, format and mixed-script characters and edge spaces, and are unique without regard to case or form', async ({ stack }) => {
    const refused: [string, RegExp][] = [
      ['ro\u0000ot', /control or format/], ['a\nb', /control or format/], ['\u202Eroot', /control or format/],
      ['r\u043e\u043et', /mix Latin, Greek and Cyrillic/], [' root', /space/], ['root ', /space/],
    ];
    for (const [username, why] of refused) {
      const answer = await stack.admin('POST', '/api/user/', { username, password: 'password-123' });
      expect(answer.status, JSON.stringify(username)).toBe(400);
      expect(answer.body.message).toMatch(why);
    }
    for (const taken of ['Root', 'ROOT', '\uff52\uff4f\uff4f\uff54']) {
      expect((await stack.admin('POST', '/api/user/', { username: taken, password: 'password-123' })).status, taken).toBe(409);
    }
    expect((await stack.admin('POST', '/api/user/', { username: 'Zoë', password: 'password-123' })).status).toBe(200);
    const login = await fetch(`${stack.gateway.url}/api/user/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'ZOË', password: 'password-123' }) });
    expect(login.status).toBe(200);
  });
});

describe('usernames that look like another', () => {
  it("are refused by Unicode's confusable skeleton (UTS #39) on create and rename, with invisible characters and stray marks", async ({ stack }) => {
    const create = (username: string) => stack.admin('POST', '/api/user/', { username, password: 'password-123' });
    // Armenian o's, Kannada, Gujarati and Devanagari zeros, small capitals, ideographic zeros, digit zeros.
    for (const username of ['r\u0585\u0585t', 'r\u0CE6\u0CE6t', 'r\u0AE6\u0AE6t', 'r\u0966\u0966t', 'r\u1D0F\u1D0Ft', 'r\u3007\u3007t', 'R00T']) {
      const answer = await create(username);
      expect(answer.status, JSON.stringify(username)).toBe(409);
      expect(answer.body.message).toMatch(/looks like the name of an existing user/);
    }
    // Blanks and fillers: braille blank, Hangul fillers (full and half width, choseong), a combining grapheme joiner, a variation selector.
    for (const username of ['root\u2800', 'root\u3164', 'ro\uFFA0ot', '\u115Froot', 'root\u034F', 'root\uFE0F']) {
      const answer = await create(username);
      expect(answer.status, JSON.stringify(username)).toBe(400);
      expect(answer.body.message).toMatch(/invisible or blank/);
    }
    for (const username of ['root\u0301', 'r\u0332oot', '\u0301root']) {
      const answer = await create(username);
      expect(answer.status, JSON.stringify(username)).toBe(400);
      expect(answer.body.message).toMatch(/combining mark/);
    }
    // Other scripts keep their marks: Hindi is a name.
    expect((await create('\u0939\u093F\u0928\u094D\u0926\u0940')).status).toBe(200);

    // Rename: not into another's look-alike; into a spelling of one's own, yes.
    const kim = await stack.adminData('POST', '/api/user/', { username: 'kim', password: 'password-123' });
    const renamed = await stack.admin('PUT', '/api/user/', { id: kim.id, username: 'r\u0585\u0585t' });
    expect(renamed.status).toBe(409);
    expect(renamed.body.message).toMatch(/looks like the name of an existing user/);
    expect((await stack.admin('PUT', '/api/user/', { id: kim.id, username: 'KIM' })).status).toBe(200);
    expect((await stack.admin('PUT', '/api/user/', { id: kim.id, username: 'kirn' })).status).toBe(200);
    // `kirn` and `kim` have one skeleton (m is r + n): the user may move between them, and
    // nobody else may now take `kim`; a name that only resembles it loosely is free.
    expect((await create('kim')).status).toBe(409);
    expect((await create('kin')).status).toBe(200);
  });

  it('are checked atomically: of 8 look-alikes created at once, exactly one is made', async ({ stack }) => {
    const spellings = ['hello', 'hel1o', 'heIlo', 'he1lo', 'hell\u0AE6', 'hell\u1D0F', 'hell\u0585', 'hel|o'];
    const answers = await Promise.all(spellings.map((username) => stack.admin('POST', '/api/user/', { username, password: 'password-123' })));
    const statuses = answers.map((a) => a.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(1);
    expect(statuses.filter((s) => s === 409)).toHaveLength(7);
  });
});

describe('job payloads on the dashboard', () => {
  it('are cut to 200 characters by default, and hidden with DASHBOARD_PAYLOADS=none', async ({ stack }) => {
    const audio = new Queue(QueueName.audio, { connection: { url: stack.redis.url }, prefix: QUEUE_PREFIX });
    const text = `secret plans ${'x'.repeat(1000)}`;
    await audio.add(QueueName.audio, { requestId: 'r', replyTo: 'nobody', deadline: Date.now() + 60_000, payload: { model: 'm', request: { contents: [{ parts: [{ text }] }] } } });
    await audio.close();
    const board = async (gateway: string) => {
      const response = await fetch(`${gateway}/admin/queues/api/queues?activeQueue=audio&status=waiting&page=1&jobsPerPage=10`, { headers: { authorization: `Bearer ${stack.adminToken}` } });
      const queues = ((await response.json()) as any).queues;
      return JSON.stringify(queues.find((q: any) => q.name === 'audio').jobs[0].data);
    };
    const shown = await board(stack.gateway.url);
    expect(shown).toContain('secret plans');
    expect(shown).toMatch(/\[8\d\d more characters\]/); // 200 characters of text and field names in all
    expect(shown).not.toContain('x'.repeat(300));
    const hidden = await board(strict.url);
    expect(hidden).not.toContain('secret plans');
    expect(hidden).toContain('DASHBOARD_PAYLOADS=none');
  });
});
