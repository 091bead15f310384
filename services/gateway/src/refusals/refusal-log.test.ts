import { describe, expect, it } from 'vitest';
import type { RequestLogRow } from '@gateway/contracts';
import { RefusalLog, type Refusal, type RefusedCaller } from './refusal-log.ts';

/** The rows as the table would hold them: a row written again (same key) replaces the first. */
function table() {
  const rows = new Map<string, RequestLogRow>();
  return { rows, sink: { record: (row: RequestLogRow) => void rows.set(row.job_id, row) }, total: () => [...rows.values()].reduce((sum, row) => sum + (row.count ?? 1), 0) };
}

const refusal = (caller: RefusedCaller, fields: Partial<Refusal> = {}): Refusal => ({
  requestId: `r-${Math.random()}`, arrivedAt: 1_000, status: 401, code: 'invalid_api_key', message: 'invalid API key',
  route: '/v1/chat/completions', model: 'm', address: '10.0.0.1', caller, streamed: false, totalMs: 1, ...fields,
});

describe('RefusalLog', () => {
  it('writes the first refusal of a credential, status and reason, and counts its repeats on that row', () => {
    let now = 0;
    const { rows, sink, total } = table();
    const log = new RefusalLog(sink, { windowMs: 60_000, rowsPerWindow: 100, keysPerAddress: 10, now: () => now });
    log.record(refusal({ kind: 'unknown-key', key: 'sk-guessed-0123456789abcdef' }, { requestId: 'first' }));
    for (let i = 0; i < 999; i++) log.record(refusal({ kind: 'unknown-key', key: 'sk-guessed-0123456789abcdef' }));
    // Another reason of the same key is a row of its own.
    log.record(refusal({ kind: 'key', userId: 3, tokenId: 7, tokenName: 'k', priority: 'interactive' }, { status: 429, code: 'rate_limited' }));
    log.writeCounts();
    expect(rows.size).toBe(2);
    const first = [...rows.values()].find((row) => row.request_id === 'first')!;
    expect(first).toMatchObject({ count: 1000, status: 401, user_id: 0, client_ip: '10.0.0.1', credential: expect.stringMatching(/^sk-\w*\*{8}\w+#[0-9a-f]{8}$/) });
    expect(JSON.stringify([...rows.values()]), 'never the key').not.toContain('0123456789abcdef');
    expect([...rows.values()].find((row) => row.token_id === 7)).toMatchObject({ user_id: 3, count: 1, status: 429 });
    expect(total()).toBe(1001);
    // A new window: a new row.
    now = 60_000;
    log.record(refusal({ kind: 'unknown-key', key: 'sk-guessed-0123456789abcdef' }));
    expect(rows.size).toBe(3);
  });

  it('bounds the rows of many unknown keys from one address, and of everyone, their counts adding up', () => {
    const { rows, sink, total } = table();
    const log = new RefusalLog(sink, { windowMs: 60_000, rowsPerWindow: 50, keysPerAddress: 10, now: () => 0 });
    for (let i = 0; i < 2_000; i++) log.record(refusal({ kind: 'unknown-key', key: `sk-flood-${i}-abcdefghijkl` }));
    log.writeCounts();
    expect(rows.size).toBe(11);
    const many = [...rows.values()].find((row) => row.credential === '*')!;
    expect(many).toMatchObject({ client_ip: '10.0.0.1', count: 1_990 });
    expect(total()).toBe(2_000);
    // From many addresses: at most rowsPerWindow rows, then one per status and reason.
    for (let i = 0; i < 5_000; i++) log.record(refusal({ kind: 'none' }, { address: `10.1.${i >> 8}.${i & 255}`, status: 401, code: 'invalid_api_key' }));
    for (let i = 0; i < 100; i++) log.record(refusal({ kind: 'none' }, { address: `10.2.0.${i}`, status: 400, code: 'invalid_request' }));
    log.writeCounts();
    expect(rows.size).toBe(50 + 2);
    expect(total()).toBe(7_100);
  });
});
