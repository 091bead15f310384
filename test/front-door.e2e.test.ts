/**
 * The front door end to end (real Redis, gateway and worker processes, a mock upstream): with
 * default settings a burst from one address is read and answered, never reset, and connections
 * that send nothing, or trickle their headers, or sit idle, are closed while real requests go on.
 */
import { request as httpRequest, Agent } from 'node:http';
import { connect, type Socket } from 'node:net';
import { describe, expect } from 'vitest';
import type { ServiceProcess } from '@gateway/testkit';
import { stackTest } from '@gateway/testkit/fixtures';

// Default settings: only the worker's concurrency is the stack's usual.
const it = stackTest({ workers: ['completion-worker'] });

interface Outcome { status: number; retryAfter?: string; error?: string }

/** One completion over its own connection (no pooling: every request is a new connection). */
function post(gateway: ServiceProcess, agent: Agent, key: string, body: string): Promise<Outcome> {
  const url = new URL(`${gateway.url}/v1/completions`);
  return new Promise((resolve) => {
    const req = httpRequest({
      host: url.hostname, port: url.port, path: url.pathname, method: 'POST', agent,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), connection: 'close' },
    }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, retryAfter: res.headers['retry-after'] as string | undefined }));
      res.on('error', (error: NodeJS.ErrnoException) => resolve({ status: 0, error: error.code ?? error.message }));
    });
    req.on('error', (error: NodeJS.ErrnoException) => resolve({ status: 0, error: error.code ?? error.message }));
    req.end(body);
  });
}

describe('a burst from one address', () => {
  it('answers every one of 5,000 requests sent at once (200, or 429/503 with Retry-After), none reset', async ({ stack, upstream, channel, apiKey }) => {
    const mock = await upstream.openai({ delayMs: 5 });
    await channel(mock, ['front-door-burst']);
    const { key } = await apiKey();
    const agent = new Agent({ keepAlive: false, maxSockets: Infinity });
    const body = JSON.stringify({ model: 'front-door-burst', prompt: 'hello', max_tokens: 4 });
    const outcomes = await Promise.all(Array.from({ length: 5000 }, () => post(stack.gateway, agent, key, body)));
    agent.destroy();
    const tally = new Map<string, number>();
    for (const o of outcomes) tally.set(o.error ?? String(o.status), (tally.get(o.error ?? String(o.status)) ?? 0) + 1);
    // Every request got an HTTP answer: no reset, no refused connection.
    expect(outcomes.filter((o) => o.status === 0), JSON.stringify([...tally])).toEqual([]);
    const refused = outcomes.filter((o) => o.status !== 200);
    expect(refused.every((o) => (o.status === 429 || o.status === 503) && Number(o.retryAfter) >= 1), JSON.stringify([...tally])).toBe(true);
    expect(outcomes.filter((o) => o.status === 200).length).toBeGreaterThan(0);
  }, 120_000);
});

/** Answers on `socket` so far, counted by their status lines as they stream in. */
function countAnswers(socket: Socket): { readonly count: number } {
  const counter = { count: 0 };
  let tail = '';
  socket.setEncoding('latin1');
  socket.on('data', (chunk: string) => {
    const text = tail + chunk;
    counter.count += text.split('HTTP/1.1 ').length - 1;
    tail = text.slice(-8);
  });
  return counter;
}

describe('one key\'s flood of requests read at once', () => {
  it("begins another key's request within a few turns of the event loop, not after the flood's thousands", async ({ stack, apiKey }) => {
    const hog = (await apiKey()).key;
    // Another user's: one user's keys take their turns in one place.
    const user = await stack.adminData('POST', '/api/user/', { username: 'front-door-other', password: 'front-door-password' });
    const other = (await apiKey({ user_id: user.id })).key;
    const url = new URL(stack.gateway.url);
    const open = () => new Promise<Socket>((resolve, reject) => {
      const socket = connect(Number(url.port), url.hostname, () => resolve(socket));
      socket.once('error', reject);
    });
    const [flood, single] = [await open(), await open()];
    const ask = (key: string) => `GET /v1/models HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: Bearer ${key}\r\n\r\n`;
    // Both keys known to the gateway (its key cache), as a tenant's are between its requests.
    for (const key of [hog, other]) expect((await fetch(`${stack.gateway.url}/v1/models`, { headers: { authorization: `Bearer ${key}` } })).status).toBe(200);
    const flooded = 5000;
    const floodAnswers = countAnswers(flood);
    const answeredBefore = new Promise<number>((resolve) => single.once('data', () => resolve(floodAnswers.count)));
    // 5,000 requests pipelined on one connection (600 KB, read by the gateway in a few turns),
    // and right behind them one request of another key on a connection of its own.
    flood.write(ask(hog).repeat(flooded));
    single.write(ask(other));
    const before = await answeredBefore;
    await expect.poll(() => floodAnswers.count, { timeout: 60_000 }).toBe(flooded);
    flood.destroy();
    single.destroy();
    console.log(`[front door] another key's request answered after ${before} of one key's ${flooded} pipelined requests`);
    // Begun as each request was read, it waited for every one read before it (1,564 of them);
    // in turns of 128, a few turns' worth (258).
    expect(before).toBeLessThan(1000);
  }, 90_000);
});

describe('a flood of made-up keys, one request each', () => {
  it("begins a known key's request within a few turns, not behind one place per made-up key", async ({ stack, apiKey }) => {
    const user = await stack.adminData('POST', '/api/user/', { username: 'front-door-known', password: 'front-door-password' });
    const known = (await apiKey({ user_id: user.id })).key;
    const url = new URL(stack.gateway.url);
    expect((await fetch(`${stack.gateway.url}/v1/models`, { headers: { authorization: `Bearer ${known}` } })).status).toBe(200);
    const open = () => new Promise<Socket>((resolve, reject) => {
      const socket = connect(Number(url.port), url.hostname, () => resolve(socket));
      socket.once('error', reject);
    });
    const flooded = 2000;
    const flood = await Promise.all(Array.from({ length: flooded }, open));
    const single = await open();
    const ask = (key: string) => `GET /v1/models HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: Bearer ${key}\r\n\r\n`;
    // Every request whole but its last byte, so the gateway reads them all in one go below.
    const asks = flood.map((_, i) => ask(`sk-made-up-${i}-${'x'.repeat(40)}`));
    flood.forEach((socket, i) => socket.write(asks[i]!.slice(0, -1)));
    single.write(ask(known).slice(0, -1));
    // A window for the gateway to read every partial request (unseen from here) before the last bytes.
    await new Promise((resolve) => setTimeout(resolve, 500));
    let answered = 0;
    const refused: string[] = [];
    for (const socket of flood) {
      socket.setEncoding('latin1');
      socket.once('data', (chunk: string) => {
        answered++;
        refused.push(chunk.slice(9, 12));
      });
    }
    const answeredBefore = new Promise<number>((resolve) => single.once('data', () => resolve(answered)));
    for (const socket of flood) socket.write('\n');
    single.write('\n');
    const before = await answeredBefore;
    await expect.poll(() => answered, { timeout: 60_000 }).toBe(flooded);
    for (const socket of [...flood, single]) socket.destroy();
    console.log(`[front door] a known key's request answered after ${before} of ${flooded} requests with made-up keys`);
    expect(new Set(refused)).toEqual(new Set(['401']));
    // Each made-up key held a place of its own in the round robin: the known key's request waited
    // for nearly every one read before it (after 1,845 of 2,000); they share 16 places now (257).
    expect(before).toBeLessThan(1000);
  }, 90_000);
});

describe('connections that hold without asking', () => {
  it('closes connections that send nothing (or only empty lines), trickle their headers or sit idle, while real requests keep working', async ({ stack, upstream, channel, apiKey }) => {
    const gateway = await stack.add('gateway', { HEADERS_TIMEOUT_MS: '1000', BODY_TIMEOUT_MS: '2000', KEEP_ALIVE_TIMEOUT_MS: '1500' });
    const mock = await upstream.openai();
    await channel(mock, ['front-door-slow']);
    const { key } = await apiKey();
    const url = new URL(gateway.url);
    const opened: Socket[] = [];
    /** Opens a connection that behaves as `act` says; resolves with how long it stayed open. */
    const hold = (act: (socket: Socket) => void) => new Promise<number>((resolve) => {
      const started = Date.now();
      const socket = connect(Number(url.port), url.hostname, () => act(socket));
      opened.push(socket);
      socket.on('error', () => {});
      socket.on('close', () => resolve(Date.now() - started));
    });
    // 300 of each: silent, trickling headers (slowloris), and idle after one answered request.
    const silent = Array.from({ length: 300 }, () => hold(() => {}));
    const slowloris = Array.from({ length: 300 }, () => hold((socket) => {
      socket.write('POST /v1/completions HTTP/1.1\r\nHost: x\r\n');
      const drip = setInterval(() => socket.write('X-Slow: 1\r\n'), 200);
      socket.on('close', () => clearInterval(drip));
    }));
    const idle = Array.from({ length: 300 }, () => hold((socket) => {
      socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
      socket.resume();
    }));
    // And empty lines (which HTTP lets a client send between requests) every 400 ms, before a
    // first request or after one answered: each re-armed the socket's idle timer, so they stayed
    // open for good.
    const blank = (first: string) => Array.from({ length: 100 }, () => hold((socket) => {
      if (first) socket.write(first);
      socket.resume();
      const drip = setInterval(() => socket.write('\r\n'), 400);
      socket.on('close', () => clearInterval(drip));
    }));
    const blankFirst = blank('');
    const blankAfter = blank('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');

    // Meanwhile real requests keep being answered, promptly.
    const agent = new Agent({ keepAlive: false });
    const body = JSON.stringify({ model: 'front-door-slow', prompt: 'hello' });
    for (let i = 0; i < 10; i++) {
      const started = Date.now();
      expect((await post(gateway, agent, key, body)).status).toBe(200);
      // Answered, not held to the time-outs (10 s for headers): a fresh-clone CI run, other files
      // beside this one, saw 1,350 ms once, and a second copy of the suite beside it 4.6 s.
      expect(Date.now() - started).toBeLessThan(8000);
    }
    agent.destroy();

    // A real request begun just before the keep-alive time-out, its headers slow to come, is
    // answered, as is a first request whose headers take most of the headers time-out.
    const answeredLate = (delayMs: number, first: boolean) => new Promise<string>((resolve) => {
      const socket = connect(Number(url.port), url.hostname, () => {
        let seen = '';
        socket.setEncoding('latin1');
        socket.on('data', (chunk: string) => {
          seen += chunk;
          if (!first && seen.split('HTTP/1.1 ').length === 3) resolve(seen.split('HTTP/1.1 ')[2]!.slice(0, 3));
          if (first && seen.startsWith('HTTP/1.1 ')) resolve(seen.slice(9, 12));
        });
        socket.on('close', () => resolve(`closed after ${JSON.stringify(seen.slice(0, 40))}`));
        socket.on('error', () => {});
        if (!first) socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
        setTimeout(() => {
          socket.write('GET /healthz HTTP/1.1\r\n');
          setTimeout(() => socket.write('Host: x\r\n'), 300);
          setTimeout(() => socket.write('\r\n'), 800);
        }, delayMs);
      });
      opened.push(socket);
    });
    const late = [answeredLate(1300, false), answeredLate(600, true)];
    const [silentMs, slowMs, idleMs, blankFirstMs, blankAfterMs] = await Promise.all([silent, slowloris, idle, blankFirst, blankAfter].map((held) => Promise.all(held)));
    // Closed by the gateway within its time-outs (checked every second), not by this test.
    expect(Math.max(...silentMs!)).toBeLessThan(3500);
    expect(Math.max(...slowMs!)).toBeLessThan(3500);
    expect(Math.max(...idleMs!)).toBeLessThan(4000);
    // Those by their deadline: twice the headers time-out after they opened, or the keep-alive
    // and the headers time-outs after their answer, each plus Node's check interval of 1 s, and
    // a second for a loaded machine (a fresh-clone CI run beside other work saw 5,013 ms). Before,
    // they stayed open for good.
    expect(Math.max(...blankFirstMs!)).toBeLessThan(5500);
    expect(Math.max(...blankAfterMs!)).toBeLessThan(6000);
    expect(await Promise.all(late)).toEqual(['200', '200']);
    for (const socket of opened) socket.destroy();
  }, 30_000);
});
