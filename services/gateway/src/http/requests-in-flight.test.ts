/**
 * A draining gateway's wait, on a real HTTP server: for the requests in flight when its stop
 * began, not for those that come meanwhile; cut at the deadline.
 */
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { RequestsInFlight } from './requests-in-flight.ts';

const servers: ReturnType<typeof createServer>[] = [];
afterEach(() => {
  for (const server of servers.splice(0)) server.closeAllConnections(), server.close();
});

/** A server that holds each request until the test answers it. */
async function holdingServer() {
  const held: ServerResponse[] = [];
  const server = createServer((_request, response) => void held.push(response));
  servers.push(server);
  const inFlight = new RequestsInFlight(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  const send = () => void fetch(url).then((r) => r.text(), () => {});
  return { held, inFlight, send };
}

describe('RequestsInFlight', () => {
  it('waits for the requests in flight when the drain began, not for one that came after', async () => {
    const { held, inFlight, send } = await holdingServer();
    send();
    await expect.poll(() => held.length).toBe(1);
    const drained = inFlight.drain(Date.now() + 10_000);
    send();
    await expect.poll(() => held.length).toBe(2);
    held[0]!.end('done');
    const started = Date.now();
    expect(await drained).toBe(0);
    expect(Date.now() - started).toBeLessThan(2000);
    expect(inFlight.count).toBe(1);
  });

  it('cuts those left at its deadline and says how many', async () => {
    const { held, inFlight, send } = await holdingServer();
    send();
    send();
    await expect.poll(() => held.length).toBe(2);
    expect(await inFlight.drain(Date.now() + 200, 100)).toBe(2);
  });
});
