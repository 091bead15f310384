import type { Server } from 'node:http';
import type { Socket } from 'node:net';

/**
 * At most `max` open connections from one client address (0: no cap). A connection past the
 * cap is closed at once, before it costs a parser or a request; behind a load balancer every
 * client shares the balancer's address, so raise or lift the cap there.
 */
export function capConnectionsPerClient(server: Server, max: number): void {
  if (max <= 0) return;
  const open = new Map<string, number>();
  server.on('connection', (socket: Socket) => {
    const address = socket.remoteAddress ?? '';
    const count = (open.get(address) ?? 0) + 1;
    if (count > max) {
      socket.destroy();
      return;
    }
    open.set(address, count);
    socket.once('close', () => {
      const left = (open.get(address) ?? 1) - 1;
      if (left <= 0) open.delete(address);
      else open.set(address, left);
    });
  });
}
