/**
 * Bodies answered before they were read, over real sockets to the real gateway: all of them
 * together are read at most at the configured rate, each client still gets its answer at once,
 * and a keep-alive connection goes on to its next request once its dropped body has come.
 */
import { Agent, request as httpRequest, type ClientRequest } from 'node:http';
import { randomBytes } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import type { AddressInfo, Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { useTestGateway } from '../../test/test-gateway.ts';

const RATE = 4 * 1024 * 1024;
const gateway = useTestGateway({ unreadBodyBytesPerSecond: RATE });

/** Bytes the gateway has read from its clients' sockets, open or closed, since `watchReads`. */
function watchReads(server: import('node:http').Server): () => number {
  const open = new Set<Socket>();
  let closed = 0;
  server.on('connection', (socket: Socket) => {
    open.add(socket);
    socket.once('close', () => {
      closed += socket.bytesRead;
      open.delete(socket);
    });
  });
  return () => closed + [...open].reduce((sum, socket) => sum + socket.bytesRead, 0);
}

async function listening(): Promise<URL> {
  if (!gateway.app.server.listening) await gateway.app.listen({ port: 0, host: '127.0.0.1' });
  return new URL(`http://127.0.0.1:${(gateway.app.server.address() as AddressInfo).port}`);
}

/** A completion with a body of `bytes` and a key the gateway refuses from its headers; resolves with the answer's status and time. */
function refused(url: URL, agent: Agent, bytes: number, sent: ClientRequest[]): Promise<{ status: number; ms: number }> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = httpRequest({
      host: url.hostname, port: url.port, path: '/v1/completions', method: 'POST', agent,
      headers: { authorization: 'Bearer sk-not-a-key', 'content-type': 'application/json', 'content-length': bytes },
    }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, ms: performance.now() - started }));
    });
    req.on('error', reject);
    req.end(Buffer.alloc(bytes, 'x'));
    sent.push(req);
  });
}

describe('bodies answered before they were read', () => {
  it('are read all together at most at UNREAD_BODY_BYTES_PER_SECOND, while each client has its answer at once', async () => {
    const url = await listening();
    const reads = watchReads(gateway.app.server);
    const agent = new Agent({ keepAlive: true, maxSockets: Infinity });
    const sent: ClientRequest[] = [];
    try {
      // 4 × 48 MB: unthrottled, the gateway reads them all within half a second (about 450 MB a
      // second seen on this machine).
      const answers = await Promise.all(Array.from({ length: 4 }, () => refused(url, agent, 48 * 1024 * 1024, sent)));
      expect(answers.map((a) => a.status)).toEqual([401, 401, 401, 401]);
      // At once: one that waited for its body at the rate would take 12 s at least (48 MB at
      // 4 MiB/s). The rest of the bound is this process making and sending 192 MB beside a
      // loaded machine's other work (2.5 s seen beside a second copy of the suite).
      expect(Math.max(...answers.map((a) => a.ms))).toBeLessThan(8000);
      const start = reads();
      const startedAt = performance.now();
      await new Promise((resolve) => setTimeout(resolve, 1500)); // the span the rate is measured over
      const seconds = (performance.now() - startedAt) / 1000;
      // The rate, with a tenth of a second of it at once after a quiet spell, and what one 10 ms
      // measurement of four sockets may read past it.
      expect(reads() - start).toBeLessThan(RATE * seconds + RATE / 10 + 8 * 1024 * 1024);
      expect(reads() - start).toBeGreaterThan(RATE * seconds * 0.5);
    } finally {
      for (const req of sent) req.destroy();
      agent.destroy();
    }
  }, 20_000);

  it('leave a keep-alive connection free for its next request once the dropped body has come, and nothing behind on it', async () => {
    const url = await listening();
    const sockets: Socket[] = [];
    const onConnection = (socket: Socket) => sockets.push(socket);
    gateway.app.server.on('connection', onConnection);
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const sent: ClientRequest[] = [];
    try {
      // The first is past what may be read at once (a tenth of a second of the rate): paused, then resumed.
      const answers = [await refused(url, agent, 2 * 1024 * 1024, sent)];
      for (let i = 0; i < 30; i++) answers.push(await refused(url, agent, 256 * 1024, sent));
      expect(new Set(answers.map((a) => a.status))).toEqual(new Set([401]));
      // One connection carried them all, and holds no listener per request it carried.
      expect(sockets).toHaveLength(1);
      expect(sent.slice(1).every((req) => req.reusedSocket)).toBe(true);
      expect(sockets[0]!.listenerCount('close')).toBeLessThan(10);
    } finally {
      gateway.app.server.off('connection', onConnection);
      agent.destroy();
    }
  });

  /** A request with `body` and its headers on `agent`: its status once it is sent and answered, or the error the client saw. */
  function send(url: URL, agent: Agent, method: string, path: string, headers: Record<string, string | number> = {}, body?: Buffer): Promise<string> {
    return new Promise((resolve) => {
      let answer: string | undefined;
      let sent = false;
      const req = httpRequest({ host: url.hostname, port: url.port, path, method, agent, headers }, (res) => {
        res.resume();
        res.on('end', () => {
          answer = `${res.statusCode}${req.reusedSocket ? ' on the same connection' : ''}`;
          if (sent) resolve(answer);
        });
      });
      req.on('finish', () => {
        sent = true;
        if (answer !== undefined) resolve(answer);
      });
      req.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
      req.end(body);
    });
  }

  it('free the connection of a body its route never read to the end (a gzip body on a GET), for its next request', async () => {
    const url = await listening();
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const body = gzipSync(randomBytes(2 * 1024 * 1024));
      const first = await send(url, agent, 'GET', '/healthz', { 'content-encoding': 'gzip', 'content-type': 'application/json', 'content-length': body.length }, body);
      // Left piped into its decoder, the body held the connection: the next request got 408 after the body's time-out.
      const started = performance.now();
      const next = await send(url, agent, 'GET', '/healthz');
      expect([first, next]).toEqual(['200', '200 on the same connection']);
      expect(performance.now() - started).toBeLessThan(1000);
    } finally {
      agent.destroy();
    }
  });

  it("answer a body past its route's limit with a 413 the client reads while still sending, never a reset", async () => {
    const url = await listening();
    // 3 MB: less than a second of dropping at this gateway's rate (a larger one is closed, as before).
    const body = randomBytes(3 * 1024 * 1024);
    const seen: string[] = [];
    for (let i = 0; i < 10; i++) {
      const agent = new Agent({ keepAlive: true, maxSockets: 1 });
      try {
        // The sign-in route takes 64 KiB: refused from its Content-Length before a byte is read.
        seen.push(await send(url, agent, 'POST', '/api/user/login', { 'content-type': 'application/json', 'content-length': body.length }, body));
        seen.push(await send(url, agent, 'GET', '/healthz'));
      } finally {
        agent.destroy();
      }
    }
    expect(new Set(seen), seen.join(', ')).toEqual(new Set(['413', '200 on the same connection']));
  });
});
