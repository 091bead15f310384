/**
 * Conversations kept on the channel of their last turn, so the provider's prompt cache hits
 * (issue 41), end to end: real gateway, completion worker, Redis and PostgreSQL, two mock
 * upstreams serving one model, and each door's own SDK (`openai` for chat completions and
 * Responses, `@anthropic-ai/sdk` for Messages, `@google/genai` for Gemini's door). The request
 * log says, per turn, whether it was kept, new or moved and why, and the prompt cache's tokens.
 */
import { describe, expect } from 'vitest';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { GoogleGenAI, type Content } from '@google/genai';
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

/**
 * Four turns, then the channel of the first disabled, then two more: the rows of each, the
 * requests each mock had seen (`seen`) before the channel was disabled (the one that served
 * first), and after.
 */
async function followedAndMoved<Mock>(stack: Stack, mocks: Mock[], channels: { id: number }[], seen: (mock: Mock) => number, turn: () => Promise<any>) {
  const rows = [];
  for (let n = 0; n < 4; n++) rows.push(await turn());
  const stuck = rows[0].channel_id;
  const [served, other] = stuck === channels[0]!.id ? [mocks[0]!, mocks[1]!] : [mocks[1]!, mocks[0]!];
  const before = [seen(served), seen(other)];
  await stack.adminData('PUT', '/api/channel/', { id: stuck, status: 2 });
  const moved = [await turn(), await turn()];
  return { rows, stuck, before, after: [seen(served), seen(other)], served, moved };
}

describe('a conversation stays on its channel through every door', () => {
  it('Messages (@anthropic-ai/sdk): kept on one of two anthropic channels, its prompt cache written once then read; moved when disabled, where the cache is cold', async ({ stack, upstream, channel, apiKey }) => {
    const model = `sticky-${++seq}`;
    const mocks = [await upstream.anthropic({ promptCache: true, text: 'A plan.' }), await upstream.anthropic({ promptCache: true, text: 'A plan.' })];
    const channels = [await channel(mocks[0]!, [model]), await channel(mocks[1]!, [model])];
    const { key } = await apiKey();
    const client = new Anthropic({ baseURL: stack.gateway.url, apiKey: key, maxRetries: 0, timeout: 15_000 });
    const system: Anthropic.TextBlockParam[] = [{ type: 'text', text: 'You plan trips, day by day. '.repeat(30), cache_control: { type: 'ephemeral' } }];
    const said: { role: 'user' | 'assistant'; text: string }[] = [{ role: 'user', text: 'Plan a week in Lisbon.' }];
    const turn = async () => {
      const requestId = `sticky-${++seq}`;
      // As applications cache a conversation: the system prompt, and a mark on the newest message only.
      const messages = said.map((m, i): Anthropic.MessageParam => ({ role: m.role, content: [{ type: 'text', text: m.text, ...(i === said.length - 1 ? { cache_control: { type: 'ephemeral' as const } } : {}) }] }));
      const reply = await client.messages.create({ model, max_tokens: 100, system, messages }, { headers: { 'x-request-id': requestId } });
      said.push({ role: 'assistant', text: reply.content[0]!.type === 'text' ? reply.content[0]!.text : '' }, { role: 'user', text: `and then? (${seq})` });
      return loggedRow(stack, requestId);
    };

    const { rows, stuck, before, after, moved } = await followedAndMoved(stack, mocks, channels, (mock) => mock.requests.length, turn);
    expect(rows.map((r) => r.channel_id)).toEqual(Array(4).fill(stuck));
    expect(rows.map((r) => r.sticky)).toEqual(['new', 'kept', 'kept', 'kept']);
    expect(before).toEqual([4, 0]);
    // The first turn wrote the cache; each later one read what the turn before wrote.
    expect(rows[0]).toMatchObject({ route: '/v1/messages', cache_read_tokens: 0 });
    expect(rows[0].cache_write_tokens).toBeGreaterThan(200);
    for (const row of rows.slice(1)) expect(row.cache_read_tokens).toBeGreaterThanOrEqual(rows[0].cache_write_tokens);
    expect(rows[3].cache_read_tokens).toBeGreaterThan(rows[1].cache_read_tokens);

    // Disabled, the conversation moves and the row says why; on a deployment of its own, the cache is written again, then read there.
    expect(moved[0]).toMatchObject({ status: 200, sticky: 'moved:disabled', cache_read_tokens: 0 });
    expect(moved[0].channel_id).not.toBe(stuck);
    expect(moved[0].cache_write_tokens).toBeGreaterThan(rows[0].cache_write_tokens);
    expect(moved[1]).toMatchObject({ sticky: 'kept', channel_id: moved[0].channel_id });
    expect(moved[1].cache_read_tokens).toBeGreaterThan(0);
    expect(after).toEqual([4, 2]);
  });

  it('Responses (openai SDK): a chain by previous_response_id kept on one of two openai channels, each turn\'s input only its new message; moved when disabled', async ({ stack, upstream, channel, apiKey }) => {
    const model = `sticky-${++seq}`;
    const usageFields = { prompt_tokens_details: { cached_tokens: 4 } };
    const mocks = [await upstream.openai({ text: 'from one', usageFields }), await upstream.openai({ text: 'from two', usageFields })];
    const channels = [await channel(mocks[0]!, [model]), await channel(mocks[1]!, [model])];
    const { key } = await apiKey();
    const client = new OpenAI({ baseURL: `${stack.gateway.url}/v1`, apiKey: key, maxRetries: 0, timeout: 15_000 });
    let previous: string | undefined;
    const turn = async () => {
      const requestId = `sticky-${++seq}`;
      // A new question each turn: only the chain names the conversation.
      const response = await client.responses.create({ model, instructions: 'You plan trips.', input: `Question ${seq}?`, ...(previous ? { previous_response_id: previous } : {}) }, { headers: { 'x-request-id': requestId } });
      previous = response.id;
      return loggedRow(stack, requestId);
    };

    const { rows, stuck, before, after, served, moved } = await followedAndMoved(stack, mocks, channels, (mock) => mock.requests.length, turn);
    expect(rows.map((r) => r.channel_id)).toEqual(Array(4).fill(stuck));
    expect(rows.map((r) => r.sticky)).toEqual(['new', 'kept', 'kept', 'kept']);
    expect(rows[3]).toMatchObject({ route: '/v1/responses', status: 200, cache_read_tokens: 4 });
    expect(before).toEqual([4, 0]);
    // The provider keeps no state: the chain's whole conversation was sent (instructions, then 4 questions and 3 answers).
    expect((served.requests[3]!.body as { messages: unknown[] }).messages).toHaveLength(1 + 4 + 3);
    expect(moved[0]).toMatchObject({ status: 200, sticky: 'moved:disabled' });
    expect(moved[0].channel_id).not.toBe(stuck);
    expect(moved[1]).toMatchObject({ sticky: 'kept', channel_id: moved[0].channel_id });
    expect(after).toEqual([4, 2]);

    // A response that continues no chain, with the same instructions and a question of its own, is a conversation of its own.
    const requestId = `sticky-${++seq}`;
    await client.responses.create({ model, instructions: 'You plan trips.', input: 'Something else entirely?' }, { headers: { 'x-request-id': requestId } });
    expect((await loggedRow(stack, requestId)).sticky).toBe('new');
  });

  it('Gemini\'s door (@google/genai): a chat kept on one of two gemini channels, its cached tokens logged; moved when disabled', async ({ stack, upstream, channel, apiKey }) => {
    const model = `sticky-${++seq}`;
    const mocks = [await upstream.gemini({ cachedTokens: 3 }), await upstream.gemini({ cachedTokens: 3 })];
    const channels = [await channel(mocks[0]!, [model]), await channel(mocks[1]!, [model])];
    const { key } = await apiKey();
    const ai = new GoogleGenAI({ apiKey: key, httpOptions: { baseUrl: stack.gateway.url, timeout: 15_000 } });
    const contents: Content[] = [{ role: 'user', parts: [{ text: 'Plan a week in Lisbon.' }] }];
    const turn = async () => {
      const requestId = `sticky-${++seq}`;
      const reply = await ai.models.generateContent({ model, contents, config: { systemInstruction: 'You plan trips.', httpOptions: { headers: { 'x-request-id': requestId } } } });
      contents.push({ role: 'model', parts: [{ text: reply.text ?? '' }] }, { role: 'user', parts: [{ text: `and then? (${seq})` }] });
      return loggedRow(stack, requestId);
    };

    const { rows, stuck, before, after, moved } = await followedAndMoved(stack, mocks, channels, (mock) => mock.received.length, turn);
    expect(rows.map((r) => r.channel_id)).toEqual(Array(4).fill(stuck));
    expect(rows.map((r) => r.sticky)).toEqual(['new', 'kept', 'kept', 'kept']);
    expect(rows[3]).toMatchObject({ status: 200, cache_read_tokens: 3 });
    expect(before).toEqual([4, 0]);
    expect(moved[0]).toMatchObject({ status: 200, sticky: 'moved:disabled' });
    expect(moved[0].channel_id).not.toBe(stuck);
    expect(moved[1]).toMatchObject({ sticky: 'kept', channel_id: moved[0].channel_id });
    expect(after).toEqual([4, 2]);
  });
});
