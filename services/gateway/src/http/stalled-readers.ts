import type { Server } from 'node:http';
import type { Socket } from 'node:net';

/**
 * Drops a client that has stopped reading its answer: a connection with bytes waiting to be
 * sent, none of which the kernel took for `ms`, is destroyed. Its request's job is then
 * cancelled and the upstream call aborted (the client-gone signal), and what the gateway
 * buffered for it is freed. A slow reader that makes any progress is kept.
 *
 * One sweep a second over the open connections, not a timer per write.
 */
export function dropStalledReaders(server: Server, ms: number, onDrop: () => void = () => {}): void {
  /** Per connection: bytes the kernel had taken at the last progress, and when that was. */
  const seen = new Map<Socket, { flushed: number; since: number }>();
  server.on('connection', (socket: Socket) => {
    seen.set(socket, { flushed: 0, since: Date.now() });
    socket.once('close', () => seen.delete(socket));
  });
  const sweep = setInterval(() => {
    const now = Date.now();
    for (const [socket, last] of seen) {
      // bytesWritten counts what is still buffered too; what the kernel took is the difference.
      const flushed = socket.bytesWritten - socket.writableLength;
      if (socket.writableLength === 0 || flushed > last.flushed) {
        last.flushed = flushed;
        last.since = now;
      } else if (now - last.since >= ms) {
        seen.delete(socket);
        onDrop();
        socket.destroy();
      }
    }
  }, Math.min(1000, Math.max(50, ms / 4)));
  sweep.unref();
  server.once('close', () => clearInterval(sweep));
}
