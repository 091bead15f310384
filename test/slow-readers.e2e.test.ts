/**
 * Clients that stop reading their answers, end to end (real Redis, gateway and worker processes,
 * a mock upstream): backpressure holds past the worker's pause lapse for as long as the client
 * reads nothing, the gateway buffers at most RESPONSE_BUFFER_BYTES per answer, and a client
 * that takes no byte for CLIENT_STALL_TIMEOUT_MS is dropped, its job cancelled and its upstream
 * call aborted.
 */
import { readFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { describe, expect, onTestFailed } from 'vitest';
import type { ServiceProcess, Stack } from '@gateway/testkit';
import { stackTest } from '@gateway/testkit/fixtures';

const STALL_MS = 16_000;
const it = stackTest({ workers: ['completion-worker'], env: { CLIENT_STALL_TIMEOUT_MS: String(STALL_MS), REQUEST_TIMEOUT_MS: '120000' } });

/** Clients the gateway dropped: for reading nothing for the stall time, or for falling past the buffer cap. */
const dropped = (gateway: ServiceProcess) => gateway.logs.filter((l) => /client (that stopped reading|fell too far behind)/.test(String(l.msg))).length;

/** Waits until the gateway has dropped `n` more clients, then lets each socket see it was closed. */
async function expectDropped(gateway: ServiceProcess, before: number, clients: { socket: Socket; closed: Promise<number> }[], withinMs: number) {
  await expect.poll(() => dropped(gateway) - before, { timeout: withinMs, interval: 250 })
    .toBe(clients.length);
  for (const c of clients) c.socket.resume();
  await Promise.all(clients.map((c) => c.closed));
}

const rssMb = (service: ServiceProcess) => {
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${service.child.pid}/status`, 'utf8'));
  return Number(match![1]) / 1024;
};

/**
 * A client that sends its request and then reads nothing. A socket that reads nothing does not
 * see its connection closed either: `closed` resolves once it is resumed.
 */
function deafClient(gateway: ServiceProcess, key: string, body: string): { socket: Socket; closed: Promise<number> } {
  const url = new URL(gateway.url);
  const started = Date.now();
  const socket = connect(Number(url.port), url.hostname, () => {
    socket.write(`POST /v1/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
    socket.pause();
  });
  socket.on('error', () => {});
  return { socket, closed: new Promise((resolve) => socket.on('close', () => resolve(Date.now() - started))) };
}

/** Samples the gateway's RSS every 500 ms for `ms`; resolves with the highest. */
async function peakRss(gateway: ServiceProcess, ms: number): Promise<number> {
  let peak = 0;
  for (const end = Date.now() + ms; Date.now() < end;) {
    peak = Math.max(peak, rssMb(gateway));
    await new Promise((r) => setTimeout(r, 500)); // the sampling's pace
  }
  return peak;
}

/**
 * On a failure, whether each completion worker lived, and its last lines: these tests' 504s
 * beside a second copy of the suite came from a worker that had died earlier in the file.
 */
const tellWorkersOnFailure = (stack: Stack) => onTestFailed(() => {
  for (const w of stack.services.filter((s) => s.name === 'completion-worker')) {
    console.log(`[readers] completion worker ${w.child.pid}: exit ${w.child.exitCode ?? w.child.signalCode ?? 'none (alive)'}; its last lines:\n${w.output.slice(-20).join('\n')}`);
  }
});

// One 24 MB text, shared by every request: 6,000 chunks of 4 KB per stream (960 MB for 40).
const BIG_TEXT = `${"x".repeat(4000)} `.repeat(6000);

describe('clients that read nothing', () => {
  it('keeps 40 streams paused past the pause lapse with the gateway\'s memory flat, then drops them and aborts their upstream calls', async ({ stack, upstream, channel, apiKey }) => {
    const mock = await upstream.openai({ text: () => BIG_TEXT });
    await channel(mock, ['deaf-stream']);
    const { key } = await apiKey();
    const before = rssMb(stack.gateway);
    const droppedBefore = dropped(stack.gateway);
    const body = JSON.stringify({ model: 'deaf-stream', prompt: 'hello', stream: true });
    const clients = Array.from({ length: 40 }, () => deafClient(stack.gateway, key, body));
    await mock.waitFor((m) => m.requests.length === 40, 30_000).catch((e) => { throw new Error(`${e.message}: ${mock.requests.length} received; gateway: ${JSON.stringify(stack.gateway.logs.filter((l) => l.msg === "request").map((l) => l.status))}`); });
    // Past the worker's own pause lapse (10 s): the gateway renews the pause.
    const peak = await peakRss(stack.gateway, 13_000);
    console.log(`[slow readers] 40 deaf streams: gateway RSS ${before.toFixed(0)} MB → peak ${peak.toFixed(0)} MB`);
    // 960 MB would flow without backpressure (before, RSS grew by 1,150 MB). Each stream's worker
    // runs at most its credit window (RESPONSE_BUFFER_BYTES / 32: 128 Ki characters) ahead of
    // what the gateway wrote through to the kernel, whose socket buffers take up to 4 MB more
    // (tcp_wmem): about 4 MB a stream passes through the gateway, garbage once written, and the
    // gateway's old space grows by half of what is live before it is collected
    // (`--heap-growing-percent=50`): +35 to +41 MB alone. Before that flag, with a window of
    // 512 Ki, +150 to +160 MB alone (+65 MB with the flag and that window).
    expect(peak - before, `RSS ${before.toFixed(0)} MB → ${peak.toFixed(0)} MB`).toBeLessThan(100);
    // Dropped after CLIENT_STALL_TIMEOUT_MS, and their upstream calls with them.
    await expectDropped(stack.gateway, droppedBefore, clients, 30_000);
    // Each job was cancelled when its client was dropped, and its upstream call with it. A
    // cancelled stream is still read for its usage for USAGE_GRACE_MS (2 s), 40 at once on a
    // loaded machine: the last may log its outcome well after its client was dropped.
    // None runs to its end: before the credit window, one could ("ok", in three fresh-clone CI
    // runs), its 24 MB sent whole into Redis before the gateway's pause reached the worker on a
    // loaded machine. The window holds the worker whatever the pause's timing.
    const ended = () => stack.services.filter((s) => s.name === 'completion-worker').flatMap((w) => w.logs).filter((l) => l.msg === 'job' || /job (dropped|failed)/.test(String(l.msg)));
    const outcomes = () => JSON.stringify(ended().map((l) => `${l.msg}:${l.outcome ?? ''}${l.outcome === 'cancelled' ? '' : ` (${l.reqId}, ${l.ms} ms)`}`));
    await expect.poll(() => ended().length, { timeout: 30_000, message: 'jobs ended' }).toBe(40).catch((e) => { throw new Error(`${e.message}; outcomes ${outcomes()}`); });
    const cancelled = ended().filter((l) => l.outcome === 'cancelled').length;
    if (cancelled < 40) console.log(`[slow readers] not cancelled: ${outcomes()}`);
    expect(cancelled, `job outcomes ${outcomes()}`).toBe(40);
    await mock.waitFor((m) => m.inFlight === 0, 10_000);
  }, 120_000);

  it('drops clients that read nothing of large whole replies after the stall time, holding no more than the replies', async ({ stack, upstream, channel, apiKey }) => {
    // 16 MB replies: more than the kernel's socket buffers take, so the rest waits in the gateway.
    const text = `${'y'.repeat(1000)} `.repeat(16_000);
    const mock = await upstream.openai({ text: () => text });
    await channel(mock, ['deaf-whole']);
    const { key } = await apiKey();
    const before = rssMb(stack.gateway);
    const droppedBefore = dropped(stack.gateway);
    const body = JSON.stringify({ model: 'deaf-whole', prompt: 'hello' });
    // Each is dropped CLIENT_STALL_TIMEOUT_MS after its reply stops moving (under load, the
    // replies themselves may take a while to come).
    const clients = Array.from({ length: 10 }, () => deafClient(stack.gateway, key, body));
    const peak = await peakRss(stack.gateway, 10_000);
    console.log(`[slow readers] 10 deaf whole replies of 16 MB: gateway RSS ${before.toFixed(0)} MB → peak ${peak.toFixed(0)} MB`);
    // Each reply is held once, as the text that came from Redis, and written a slice at a time.
    expect(peak - before, `RSS ${before.toFixed(0)} MB → ${peak.toFixed(0)} MB`).toBeLessThan(10 * 16 * 2 + 100);
    await expectDropped(stack.gateway, droppedBefore, clients, 80_000);
  }, 120_000);
});

describe('a client that reads', () => {
  it('takes a 24 MB stream at full speed, every chunk in order, the worker credited as it reads', async ({ stack, upstream, channel, apiKey }) => {
    tellWorkersOnFailure(stack);
    const mock = await upstream.openai({ text: () => BIG_TEXT });
    await channel(mock, ['reader-stream']);
    const { key } = await apiKey();
    const started = Date.now();
    const answer = await fetch(`${stack.gateway.url}/v1/completions`, {
      method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'reader-stream', prompt: 'hello', stream: true }),
    });
    expect(answer.status).toBe(200);
    let text = '';
    let events = 0;
    for (const line of (await answer.text()).split('\n')) {
      if (!line.startsWith('data: ') || line === 'data: [DONE]') continue;
      text += (JSON.parse(line.slice(6)) as { choices: { text: string }[] }).choices[0]!.text;
      events++;
    }
    const ms = Date.now() - started;
    console.log(`[readers] one 24 MB stream (${events} chunks of about 4 kB) read whole in ${ms} ms`);
    // Every word, in order, with a credit back to the worker every 256 Ki characters on the way (about 100).
    expect(text.length).toBe(BIG_TEXT.length);
    expect(text === BIG_TEXT).toBe(true);
  }, 180_000);

  it('takes streamed events larger than RESPONSE_BUFFER_BYTES (4 MiB) whole, one or several in a row', async ({ stack, upstream, channel, apiKey }) => {
    tellWorkersOnFailure(stack);
    // Words of 12 MB: one event each (a long speech's audio, a large Gemini event, is one too).
    const word = (c: string) => c.repeat(12 * 1024 * 1024);
    const mock = await upstream.openai({ text: (prompt) => (prompt === 'one' ? word('a') : `${word('b')} ${word('c')} end`) });
    await channel(mock, ['reader-big-event']);
    const { key } = await apiKey();
    const droppedBefore = dropped(stack.gateway);
    const read = async (path: string, body: Record<string, unknown>) => {
      const answer = await fetch(`${stack.gateway.url}${path}`, {
        method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'reader-big-event', stream: true, ...body }),
      });
      expect(answer.status).toBe(200);
      let text = '';
      for (const line of (await answer.text()).split('\n')) {
        if (!line.startsWith('data: ') || line === 'data: [DONE]') continue;
        const choice = (JSON.parse(line.slice(6)) as { choices: { text?: string; delta?: { content?: string } }[] }).choices[0];
        text += choice?.text ?? choice?.delta?.content ?? '';
      }
      return text;
    };
    // Before, the client was dropped as soon as the event was written: the cap counted the event itself.
    expect(await read('/v1/completions', { prompt: 'one' })).toBe(word('a'));
    expect(await read('/v1/chat/completions', { messages: [{ role: 'user', content: 'two' }] })).toBe(`${word('b')} ${word('c')} end`);
    expect(dropped(stack.gateway) - droppedBefore).toBe(0);
  }, 240_000);
});
