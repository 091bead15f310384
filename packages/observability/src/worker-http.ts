import { createServer, type Server } from 'node:http';

export interface WorkerHttpOptions {
  port: number;
  host: string;
  /** Why the worker cannot take jobs now, or null when it can. */
  notReadyReason: () => Promise<string | null>;
  /** Extra routes by path (e.g. /metrics), answered with their text. */
  routes?: Record<string, () => Promise<{ contentType: string; body: string }>>;
}

/**
 * A worker's own small HTTP port (METRICS_PORT): `/healthz` for container health checks and
 * whatever else the worker exposes there. Not meant to be public.
 */
export async function startWorkerHttp(options: WorkerHttpOptions): Promise<Server> {
  const server = createServer((request, response) => {
    const path = (request.url ?? '/').split('?', 1)[0]!;
    if (path === '/healthz') {
      options.notReadyReason().then(
        (reason) => {
          response.writeHead(reason ? 503 : 200, { 'content-type': 'application/json' });
          response.end(JSON.stringify(reason ? { status: 'unavailable', reason } : { status: 'ok' }));
        },
        (error: Error) => {
          response.writeHead(503, { 'content-type': 'application/json' });
          response.end(JSON.stringify({ status: 'unavailable', reason: error.message }));
        },
      );
      return;
    }
    const route = options.routes?.[path];
    if (!route) {
      response.writeHead(404).end();
      return;
    }
    route().then(
      ({ contentType, body }) => {
        response.writeHead(200, { 'content-type': contentType });
        response.end(body);
      },
      () => response.writeHead(500).end(),
    );
  });
  await new Promise<void>((resolve) => server.listen(options.port, options.host, resolve));
  return server;
}

export interface WorkerPortOptions {
  port: number;
  host: string;
  redis: { status: string };
  isRunning: () => boolean;
  registry: { contentType: string; metrics(): Promise<string> };
}

/**
 * The standard worker port: `/healthz` (Redis ready and the worker running) and `/metrics`.
 * Nothing is started when `port` is 0.
 */
export async function serveWorkerPort(options: WorkerPortOptions): Promise<Server | undefined> {
  if (!options.port) return undefined;
  return startWorkerHttp({
    port: options.port,
    host: options.host,
    notReadyReason: async () =>
      options.redis.status !== 'ready' ? `redis is ${options.redis.status}` : options.isRunning() ? null : 'worker stopped',
    routes: {
      '/metrics': async () => ({ contentType: options.registry.contentType, body: await options.registry.metrics() }),
    },
  });
}
