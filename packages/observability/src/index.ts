/**
 * @gateway/observability owns what operators look at: Prometheus metrics of the gateway and
 * the workers, and each worker's own HTTP port with its health check and metrics.
 */
export { startWorkerHttp, serveWorkerPort, type WorkerHttpOptions, type WorkerPortOptions } from './worker-http.ts';
export { createGatewayMetrics, createWorkerMetrics, countJobs, observeRouting, requestLogMetrics, type GatewayMetrics, type WorkerMetrics } from './metrics.ts';
