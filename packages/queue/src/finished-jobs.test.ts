import { describe, expect, it } from 'vitest';
import { finishedJobData, finishedOptionsFor, keptWhenFailed, keptWhenFinished, KEPT_IF_FAILED, KEPT_WHEN_FINISHED, REMOVED_WHEN_FINISHED } from './finished-jobs.ts';

const envelope = { requestId: 'r-1', replyTo: 'ingress-7', deadline: 1, stream: true, window: 4096, hold: 'hold-1', tenant: { userId: 3, tokenId: 9 } };

describe('a finished job kept on its queue', () => {
  it("keeps who asked and what, never the payload's text, reply address or hold", () => {
    const model = finishedJobData({ ...envelope, payload: { caller: { tokenId: 9, userId: 3, group: 'default', tokenName: 'k' }, operation: 'chat', request: { model: 'gpt-x', messages: [{ role: 'user', content: 'private words' }] } } });
    expect(model).toEqual({ requestId: 'r-1', deadline: 1, stream: true, tenant: { userId: 3, tokenId: 9 }, payload: { operation: 'chat', model: 'gpt-x' } });
    // A speech job names its model beside the request; a management job's input (hashes, sealed keys) goes.
    expect(finishedJobData({ ...envelope, payload: { operation: 'generateContent', model: 'gemini-tts', method: 'generateContent', request: { contents: [] } } }).payload).toEqual({ operation: 'generateContent', model: 'gemini-tts' });
    const admin = finishedJobData({ ...envelope, payload: { operation: 'user.update', actor: { id: 1, role: 100 }, input: { password: 'scrypt$abc' } } });
    expect(JSON.stringify(admin)).not.toMatch(/scrypt|actor|input/);
    // A payload beside its job: only its key was in the job, and it goes too.
    expect(finishedJobData({ ...envelope, payloadKey: 'gw:payload:1' })).not.toHaveProperty('payloadKey');
  });

  it('gives the same when made again from its own result (a job failed after it was made small)', () => {
    const once = finishedJobData({ ...envelope, payload: { operation: 'completions', request: { model: 'm', prompt: 'p' } } });
    expect(finishedJobData(once as never)).toEqual(once);
  });

  it('is made small only for jobs their client keeps', () => {
    expect(keptWhenFinished(KEPT_WHEN_FINISHED)).toBe(true);
    expect(keptWhenFinished(REMOVED_WHEN_FINISHED)).toBe(false);
    expect(keptWhenFinished({})).toBe(false);
  });

  it('keeps one job in N once completed, every failed one, and none at 0', () => {
    const kept = Array.from({ length: 30 }, (_, turn) => finishedOptionsFor(turn, 10)).filter(keptWhenFinished);
    expect(kept).toHaveLength(3);
    expect(Array.from({ length: 30 }, (_, turn) => finishedOptionsFor(turn, 10)).every(keptWhenFailed)).toBe(true);
    expect(keptWhenFinished(KEPT_IF_FAILED)).toBe(false);
    expect(finishedOptionsFor(0, 1)).toBe(KEPT_WHEN_FINISHED);
    expect(finishedOptionsFor(0, 0)).toBe(REMOVED_WHEN_FINISHED);
  });
});
