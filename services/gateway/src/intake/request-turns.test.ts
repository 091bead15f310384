/**
 * Turns as requests are read, over a real socket to a plain Node server: what waits for its turn
 * stays bounded by what the server has begun, as it was when every request was begun at once.
 */
import { createServer } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { takeRequestsInTurns } from './request-turns.ts';

describe('requests begun in turns', () => {
  it('reads no more of a connection pipelining bodiless requests while its requests wait their turn', async () => {
    const server = createServer((_request, response) => response.end('ok'));
    const turns = takeRequestsInTurns(server, { perTurn: 32 });
    // The most requests waiting at once, seen as each is read.
    let mostWaiting = 0;
    server.on('request', () => { mostWaiting = Math.max(mostWaiting, turns.size); });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const socket = connect(port, '127.0.0.1');
    const sent = 20_000;
    let answered = 0;
    let tail = '';
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => {
      const text = tail + chunk;
      answered += text.split('HTTP/1.1 200').length - 1;
      tail = text.slice(-12);
    });
    // 20,000 GETs (560 KB) in one write: no body holds any of them back.
    socket.write('GET / HTTP/1.1\r\nHost: a\r\n\r\n'.repeat(sent));
    await expect.poll(() => answered, { timeout: 20_000 }).toBe(sent);
    socket.destroy();
    await new Promise((resolve) => server.close(resolve));
    // Unread, the rest stay in the socket (and the sender's), not parsed into requests that wait:
    // without, Node parsed all 20,000 as fast as they came while 32 a turn were begun.
    expect(mostWaiting).toBeLessThan(sent / 4);
    expect(turns.size).toBe(0);
  });
});
