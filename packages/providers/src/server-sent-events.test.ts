import { afterEach, describe, expect, it } from 'vitest';
import { UpstreamError } from '@gateway/contracts';
import { readServerSentEvents } from './server-sent-events.ts';
import { setUpstreamLimits, upstreamLimits } from './upstream-request.ts';

const saved = { ...upstreamLimits };
afterEach(() => setUpstreamLimits(saved));

async function read(pieces: string[]): Promise<{ events: string[]; error?: unknown }> {
  const events: string[] = [];
  try {
    for await (const data of readServerSentEvents((async function* () { for (const piece of pieces) yield Buffer.from(piece); })())) events.push(data);
    return { events };
  } catch (error) {
    return { events, error };
  }
}

describe('readServerSentEvents and its limits', () => {
  it('refuses an event past the limit that came whole in one piece, before passing on anything of that piece', async () => {
    setUpstreamLimits({ maxEventBytes: 1024, maxReplyBytes: 1024 * 1024 });
    const { events, error } = await read(['data: small\n\n', `data: ${'x'.repeat(2000)}\n\ndata: after\n\n`]);
    expect(events).toEqual(['small']);
    expect(error).toBeInstanceOf(UpstreamError);
    expect(error).toMatchObject({ kind: 'protocol', ofTheRequest: true, message: expect.stringMatching(/event is larger than 1024 bytes/) });
  });

  it('refuses the same event spread over pieces, and the piece that takes a stream past its whole limit', async () => {
    setUpstreamLimits({ maxEventBytes: 1024, maxReplyBytes: 4096 });
    expect((await read(['data: ', 'x'.repeat(600), 'x'.repeat(600), '\n\n'])).error).toMatchObject({ message: expect.stringMatching(/event is larger/) });
    const many = Array.from({ length: 10 }, (_, i) => `data: ${String(i).repeat(500)}\n\n`);
    const whole = await read(many);
    expect(whole.error).toMatchObject({ message: expect.stringMatching(/stream is larger than 4096 bytes/) });
    expect(whole.events.length).toBeLessThan(10);
  });

  it('passes events within the limits, a multi-byte one counted by its bytes', async () => {
    setUpstreamLimits({ maxEventBytes: 1024, maxReplyBytes: 1024 * 1024 });
    expect((await read(['data: a\n\ndata: b\n\n', `data: ${'é'.repeat(400)}\n\n`])).events).toEqual(['a', 'b', 'é'.repeat(400)]);
    expect((await read([`data: ${'é'.repeat(600)}\n\n`])).error).toBeInstanceOf(UpstreamError);
  });
});
