/**
 * Conversations kept on the channel of their last turn, so the provider's prompt cache hits
 * (issue 41), end to end: real gateway, completion worker, Redis and PostgreSQL, two mock
 * upstreams serving one model, and the `openai` SDK. The request log says, per turn, whether it
 * was kept, new or moved and why, and the prompt cache's tokens.
 */
import { describe, expect } from 'vitest';
import OpenAI from 'openai';
import { loggedRow, stackTest } from '@gateway/testkit/fixtures';
import type { Stack } from '@gateway/testkit';

const it = stackTest({ database: true, workers: ['completion-worker'], env: { REQUEST_TIMEOUT_MS: '15000' }, channelDefaults: { timeout_ms: 3000 } });

let seq = 0;
type Message = OpenAI.ChatCompletionMessageParam;

/** A user of its own with a key, as root makes them. */
async function userKey(stack: Stack): Promise<string> {
  const user = await stack.adminData('POST', '/api/user/', { username: `sticky${++seq}`, password: 'sticky-password' });
  return (await stack.adminData('POST', '/api/token/', { name: 'k', user_id: user.id, unlimited_quota: true })).key;
}

/** A chat that grows a turn at a time, as an application sends it: its whole history, every turn. */
function conversation(stack: Stack, key: string, model: string, opening: string, headers: Record<string, string> = {}) {
  const client = new OpenAI({ baseURL: `${stack.gateway.url}/v1`, apiKey: key, maxRetries: 0, timeout: 15_000, defaultHeaders: headers });
  const messages: Message[] = [{ role: 'system', content: 'You plan trips.' }, { role: 'user', content: opening }];
  return {
    /** Sends the next turn; resolves to its log row. */
    async turn(): Promise<any> {
      const requestId = `sticky-${++seq}`;
      const reply = await client.chat.completions.create({ model, messages }, { headers: { 'x-request-id': requestId } });
      messages.push({ role: 'assistant', content: reply.choices[0]!.message.content ?? '' }, { role: 'user', content: `and then? (${seq})` });
      return loggedRow(stack, requestId);
    },
  };
}

describe('a conversation stays on the channel of its last turn', () => {
  it('keeps ten turns on one of two equal channels, moves when it is disabled and says so, and logs the cache tokens', async ({ stack, upstream, channel, apiKey }) => {
    const model = `sticky-${++seq}`;
    const usageFields = { prompt_tokens_details: { cached_tokens: 4 } };
    const mocks = [await upstream.openai({ text: 'from one', usageFields }), await upstream.openai({ text: 'from two', usageFields })];
    const channels = [await channel(mocks[0]!, [model]), await channel(mocks[1]!, [model])];
    const { key } = await apiKey();
    const chat = conversation(stack, key, model, 'Plan a week in Lisbon.');

    const rows = [];
    for (let turn = 0; turn < 10; turn++) rows.push(await chat.turn());
    const stuck = rows[0].channel_id;
    expect(rows.map((r) => r.channel_id)).toEqual(Array(10).fill(stuck));
    expect(rows.map((r) => r.sticky)).toEqual(['new', ...Array(9).fill('kept')]);
    expect(rows[9]).toMatchObject({ status: 200, cache_read_tokens: 4 });
    expect(rows[9].cache_write_tokens, 'none reported').toBeUndefined();
    const [served, other] = stuck === channels[0].id ? [mocks[0]!, mocks[1]!] : [mocks[1]!, mocks[0]!];
    expect(served.requests).toHaveLength(10);
    expect(other.requests).toHaveLength(0);
    // The upstream saw the conversation grow: the last turn carried every message before it.
    expect((served.requests.at(-1)!.body as { messages: unknown[] }).messages).toHaveLength(2 + 9 * 2);

    // Its channel disabled by an administrator: the next turn moves, and the row says why; the
    // turn after stays where it moved.
    await stack.adminData('PUT', '/api/channel/', { id: stuck, status: 2 });
    const moved = await chat.turn();
    expect(moved).toMatchObject({ status: 200, sticky: 'moved:disabled' });
    expect(moved.channel_id).not.toBe(stuck);
    expect(await chat.turn()).toMatchObject({ sticky: 'kept', channel_id: moved.channel_id });
    expect(other.requests).toHaveLength(2);

    // Enabled again, the first channel takes other conversations (each new) while this one stays.
    await stack.adminData('PUT', '/api/channel/', { id: stuck, status: 1 });
    const landed = new Set<number>();
    for (let n = 0; n < 24 && !landed.has(stuck); n++) {
      const row = await conversation(stack, key, model, `Plan a weekend number ${n}.`).turn();
      expect(row.sticky).toBe('new');
      landed.add(row.channel_id);
    }
    expect(landed.has(stuck), 'another conversation landed on the first channel').toBe(true);
    expect(await chat.turn()).toMatchObject({ sticky: 'kept', channel_id: moved.channel_id });
  });

  it('never shares a conversation between two users sending the same messages, and follows a session header', async ({ stack, upstream, channel }) => {
    const model = `sticky-${++seq}`;
    const mocks = [await upstream.openai(), await upstream.openai()];
    for (const mock of mocks) await channel(mock, [model]);
    const [alice, bob] = [await userKey(stack), await userKey(stack)];

    const first = conversation(stack, alice, model, 'Same question.');
    expect((await first.turn()).sticky).toBe('new');
    expect((await first.turn()).sticky).toBe('kept');
    // Bob's identical messages are a conversation of his own: new, not Alice's kept one.
    expect((await conversation(stack, bob, model, 'Same question.').turn()).sticky).toBe('new');

    // A session header names the conversation, whatever the messages: Claude Code's or the generic one.
    const sessionId = `session-${seq}`;
    const session = { 'x-claude-code-session-id': sessionId };
    const opened = await conversation(stack, alice, model, 'One opening.', session).turn();
    expect(opened.sticky).toBe('new');
    const later = await conversation(stack, alice, model, 'Another opening entirely.', session).turn();
    expect(later).toMatchObject({ sticky: 'kept', channel_id: opened.channel_id });
    expect((await conversation(stack, alice, model, 'Another opening entirely.', { 'x-session-id': sessionId }).turn()).sticky).toBe('kept');
  });
});
