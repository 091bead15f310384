import { beforeAll, describe, expect, it } from 'vitest';
import type { ResponsesResponse } from '@gateway/contracts';
import type { Database } from './connection.ts';
import { identifiedItems, ResponseStore, STATEMENT_TIMEOUT_MS } from './response-store.ts';
import { FileStore } from './file-store.ts';
import { useTestDatabase } from '@gateway/testkit/test-database';
import { forgetUser, highestUserIdOnRecord } from './user-records.ts';

const response = (id: string, text = 'hello'): ResponsesResponse => ({
  id, object: 'response', created_at: 1, status: 'completed', model: 'm',
  output: [{ id: `msg_${id}`, type: 'message', role: 'assistant', content: [{ type: 'output_text', text }] }],
  usage: null,
});

describe('stored responses', () => {
  const database = useTestDatabase();
  let db: Database;
  beforeAll(() => {
    db = database.db();
  });

  it('are their user\'s alone: read, an item found by id, removed; another user sees none of it', async () => {
    const store = new ResponseStore(db, 30);
    const input = identifiedItems([{ role: 'user', content: 'hi' }, { type: 'function_call_output', call_id: 'c', output: 'x' }]);
    expect(input).toEqual([
      { type: 'message', role: 'user', content: 'hi', id: expect.stringMatching(/^msg_/) },
      { type: 'function_call_output', call_id: 'c', output: 'x', id: expect.stringMatching(/^fco_/) },
    ]);
    await store.save(7, response('resp_a'), input);
    expect(await store.get('resp_a', 7)).toEqual({ response: response('resp_a'), inputItems: input });
    expect(await store.get('resp_a', 8)).toBeUndefined();
    expect(await store.item('msg_resp_a', 7)).toMatchObject({ type: 'message', role: 'assistant' });
    expect(await store.item(input[1]!.id, 7)).toEqual(input[1]);
    expect(await store.item('msg_resp_a', 8)).toBeUndefined();
    // What the user keeps, with its files and batches: each stored response's input and reply.
    const { rows } = await db.query<{ bytes: string }>('SELECT bytes FROM stored_responses WHERE id = $1', ['resp_a']);
    expect(Number(rows[0]!.bytes)).toBe(Buffer.byteLength(JSON.stringify(input)) + Buffer.byteLength(JSON.stringify(response('resp_a'))));
    expect((await new FileStore(db).usage(7)).bytes).toBe(Number(rows[0]!.bytes));
    expect(await store.remove('resp_a', 8)).toBe(false);
    expect(await store.remove('resp_a', 7)).toBe(true);
    expect(await store.get('resp_a', 7)).toBeUndefined();
  });

  it('keep the conversation a response is a turn of, kept by a background response\'s final save', async () => {
    const store = new ResponseStore(db, 30);
    await store.save(7, { ...response('resp_conv'), status: 'queued' }, [], 'conversation-key');
    await store.save(7, response('resp_conv', 'done'), []);
    expect(await store.get('resp_conv', 7)).toEqual({ response: response('resp_conv', 'done'), inputItems: [], conversation: 'conversation-key' });
    await store.save(7, response('resp_none'), []);
    expect((await store.get('resp_none', 7))?.conversation).toBeUndefined();
  });

  it('keep a streamed background response\'s events in order, its user\'s alone, gone with the response', async () => {
    const store = new ResponseStore(db, 30);
    await store.save(31, { ...response('resp_streamed'), status: 'in_progress' }, []);
    await store.appendEvents('resp_streamed', [{ seq: 1, data: 'b' }, { seq: 0, data: 'a' }]);
    await store.appendEvents('resp_streamed', [{ seq: 2, data: 'c' }, { seq: 1, data: 'again' }]);
    expect(await store.eventsAfter('resp_streamed', 31, -1)).toEqual([{ seq: 0, data: 'a' }, { seq: 1, data: 'b' }, { seq: 2, data: 'c' }]);
    expect(await store.eventsAfter('resp_streamed', 31, 0, 1)).toEqual([{ seq: 1, data: 'b' }]);
    expect(await store.eventsAfter('resp_streamed', 32, -1)).toEqual([]);
    expect(await store.setStatus('resp_streamed', 31, 'cancelled')).toBe(true);
    expect(await store.setStatus('resp_streamed', 31, 'failed')).toBe(false);
    await store.save(31, response('resp_streamed'), []);
    expect((await store.get('resp_streamed', 31))!.response.status).toBe('cancelled');
    await store.remove('resp_streamed', 31);
    expect((await db.query('SELECT 1 FROM stored_response_events WHERE response_id = $1', ['resp_streamed'])).rowCount).toBe(0);
  });

  it('find many referenced items in one statement, each once, the user\'s own; a missing one is left out', async () => {
    const store = new ResponseStore(db, 30);
    const input = identifiedItems([{ role: 'user', content: 'one' }, { role: 'user', content: 'two' }]);
    await store.save(11, response('resp_items'), input);
    await store.save(12, response('resp_foreign'), []);
    const ids = [input[0]!.id, 'msg_resp_items', input[0]!.id, 'msg_resp_foreign', 'msg_nowhere', ...Array.from({ length: 998 }, (_, n) => `msg_missing_${n}`)];
    const found = await store.items(ids, 11);
    expect([...found.keys()].sort()).toEqual([input[0]!.id, 'msg_resp_items'].sort());
    expect(found.get(input[0]!.id)).toEqual(input[0]);
    expect(found.get('msg_resp_items')).toMatchObject({ type: 'message', role: 'assistant' });
    expect(await store.items([], 11)).toEqual(new Map());
  });

  it('page a response\'s input items in PostgreSQL, either order, after an item; another user\'s is none', async () => {
    const store = new ResponseStore(db, 30);
    const input = identifiedItems(Array.from({ length: 7 }, (_, n) => ({ role: 'user', content: `item ${n}` })));
    const ids = input.map((item) => item.id);
    await store.save(13, response('resp_page'), input);
    await store.save(13, response('resp_empty'), []);
    expect(await store.inputItemsPage('resp_page', 13, { limit: 3, order: 'asc' })).toEqual({ data: input.slice(0, 3), hasMore: true });
    expect(await store.inputItemsPage('resp_page', 13, { after: ids[2], limit: 3, order: 'asc' })).toEqual({ data: input.slice(3, 6), hasMore: true });
    expect(await store.inputItemsPage('resp_page', 13, { after: ids[5], limit: 3, order: 'asc' })).toEqual({ data: input.slice(6), hasMore: false });
    expect((await store.inputItemsPage('resp_page', 13, { limit: 3, order: 'desc' }))!.data.map((item) => item.id)).toEqual([ids[6], ids[5], ids[4]]);
    expect((await store.inputItemsPage('resp_page', 13, { after: ids[2], limit: 5, order: 'desc' }))).toEqual({ data: [input[1], input[0]], hasMore: false });
    // An `after` that is not there pages from the start, as before.
    expect((await store.inputItemsPage('resp_page', 13, { after: 'msg_unknown', limit: 1, order: 'asc' }))!.data).toEqual([input[0]]);
    expect(await store.inputItemsPage('resp_empty', 13, { limit: 3, order: 'asc' })).toEqual({ data: [], hasMore: false });
    expect(await store.inputItemsPage('resp_page', 52, { limit: 3, order: 'asc' })).toBeUndefined();
    expect(await store.inputItemsPage('resp_nowhere', 13, { limit: 3, order: 'asc' })).toBeUndefined();
  });

  it('keep whether a background response was created streamed, and read a status alone', async () => {
    const store = new ResponseStore(db, 30);
    await store.save(15, { ...response('resp_bg_streamed'), status: 'queued' }, [], undefined, true);
    await store.save(15, { ...response('resp_bg_plain'), status: 'queued' }, []);
    await store.save(15, response('resp_bg_streamed', 'done'), []);
    expect((await store.get('resp_bg_streamed', 15))!.streamed).toBe(true);
    expect((await store.get('resp_bg_plain', 15))!.streamed).toBeUndefined();
    expect(await store.status('resp_bg_plain', 15)).toBe('queued');
    await store.setStatus('resp_bg_plain', 15, 'cancelled');
    expect(await store.status('resp_bg_plain', 15)).toBe('cancelled');
    expect(await store.status('resp_bg_plain', 16)).toBeUndefined();
  });

  it('bound each statement: one that runs past STATEMENT_TIMEOUT_MS is cancelled by PostgreSQL', async () => {
    const store = new ResponseStore(db, 30);
    const { rows } = await (store as unknown as { query(text: string, values: unknown[]): Promise<{ rows: { timeout: string }[] }> }).query('SELECT current_setting($1) AS timeout', ['statement_timeout']);
    expect(rows[0]!.timeout).toBe(`${STATEMENT_TIMEOUT_MS / 1000}s`);
  });

  it('expire after their retention, are swept as others are written, and go with their user', async () => {
    const store = new ResponseStore(db, 30);
    await store.save(21, response('resp_old'), []);
    const { rows } = await db.query<{ expires_at: string; created_at: string }>('SELECT created_at, expires_at FROM stored_responses WHERE id = $1', ['resp_old']);
    expect(Number(rows[0]!.expires_at) - Number(rows[0]!.created_at)).toBe(30 * 86_400);
    await db.query('UPDATE stored_responses SET expires_at = 1 WHERE id = $1', ['resp_old']);
    expect(await store.get('resp_old', 21)).toBeUndefined();
    await store.save(21, response('resp_new'), []);
    expect((await db.query('SELECT id FROM stored_responses WHERE id = $1', ['resp_old'])).rowCount).toBe(0);

    // Only stored responses hold user 21 here: a new user is numbered above it.
    expect(await highestUserIdOnRecord(db)).toBe(21);
    await forgetUser(db, 21);
    expect(await store.get('resp_new', 21)).toBeUndefined();
  });
});
