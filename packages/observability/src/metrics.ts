import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

const latencyBuckets = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];

/** What the gateway counts: requests by route and status, their duration, and the queues. */
export function createGatewayMetrics() {
  const registry = new Registry();
  registry.setDefaultLabels({ service: 'gateway' });
  collectDefaultMetrics({ register: registry });
  return {
    registry,
    requests: new Counter({ name: 'gateway_http_requests_total', help: 'HTTP requests by route, method and status', labelNames: ['route', 'method', 'status'], registers: [registry] }),
    duration: new Histogram({ name: 'gateway_http_request_duration_seconds', help: 'HTTP request duration by route', labelNames: ['route', 'method'], buckets: latencyBuckets, registers: [registry] }),
    queueJobs: new Gauge({ name: 'gateway_queue_jobs', help: 'Jobs in each queue by state (read at scrape time)', labelNames: ['queue', 'state'], registers: [registry] }),
    waitingReplies: new Gauge({ name: 'gateway_requests_waiting', help: 'Requests of this gateway waiting for a worker reply', registers: [registry] }),
    rejected: new Counter({ name: 'gateway_requests_rejected_total', help: 'Requests refused before enqueueing, by reason', labelNames: ['reason'], registers: [registry] }),
    queueWorkers: new Gauge({ name: 'gateway_queue_workers', help: 'Worker processes serving each queue (read at scrape time)', labelNames: ['queue'], registers: [registry] }),
    queueConcurrency: new Gauge({ name: 'gateway_queue_worker_concurrency', help: 'Jobs the worker processes serving each queue run at once, together', labelNames: ['queue'], registers: [registry] }),
    queueFinished: new Gauge({ name: 'gateway_queue_jobs_finished', help: 'Jobs finished by each queue since Redis began counting (monotonic: its rate() is the drain rate)', labelNames: ['queue'], registers: [registry] }),
    channelInFlight: new Gauge({ name: 'gateway_channel_in_flight', help: 'Requests holding a slot of each channel with a max_concurrency (read at scrape time)', labelNames: ['channel'], registers: [registry] }),
    channelLimit: new Gauge({ name: 'gateway_channel_max_concurrency', help: 'Each channel\'s max_concurrency (0: unlimited)', labelNames: ['channel'], registers: [registry] }),
    channelState: new Gauge({ name: 'gateway_channel_state', help: '1 for each channel\'s state now: enabled, cooling_down, disabled, auto_disabled', labelNames: ['channel', 'state'], registers: [registry] }),
  };
}
export type GatewayMetrics = ReturnType<typeof createGatewayMetrics>;

/** What a worker counts: jobs, upstream calls by channel, failovers, channel health, usage. */
export function createWorkerMetrics(service: string) {
  const registry = new Registry();
  registry.setDefaultLabels({ service });
  collectDefaultMetrics({ register: registry });
  return {
    registry,
    jobs: new Counter({ name: 'worker_jobs_total', help: 'Jobs finished by queue and outcome (ok, error, cancelled, expired)', labelNames: ['queue', 'outcome'], registers: [registry] }),
    jobDuration: new Histogram({ name: 'worker_job_duration_seconds', help: 'Job run time by queue', labelNames: ['queue'], buckets: latencyBuckets, registers: [registry] }),
    upstreamLatency: new Histogram({ name: 'worker_upstream_duration_seconds', help: 'Upstream call duration by channel', labelNames: ['channel'], buckets: latencyBuckets, registers: [registry] }),
    upstreamErrors: new Counter({ name: 'worker_upstream_errors_total', help: 'Failed upstream calls by channel and status (or connection/timeout)', labelNames: ['channel', 'status'], registers: [registry] }),
    failovers: new Counter({ name: 'worker_failovers_total', help: 'Times a request moved on to another channel', labelNames: ['queue'], registers: [registry] }),
    cooldowns: new Counter({ name: 'worker_channel_cooldowns_total', help: 'Channels cooled down after repeated failures', labelNames: ['channel'], registers: [registry] }),
    autoDisables: new Counter({ name: 'worker_channel_auto_disables_total', help: 'Channels auto-disabled after repeated 401/403', labelNames: ['channel'], registers: [registry] }),
    usageTokens: new Counter({ name: 'worker_usage_tokens_total', help: 'Tokens charged to keys, users and channels', labelNames: ['queue'], registers: [registry] }),
  };
}

export type WorkerMetrics = ReturnType<typeof createWorkerMetrics>;

/** Feeds a worker's job counters; pass as `onJobDone` to startJobWorker. */
export function countJobs(metrics: WorkerMetrics, queue: string) {
  return (outcome: string, seconds: number) => {
    metrics.jobs.inc({ queue, outcome });
    if (outcome !== 'expired') metrics.jobDuration.observe({ queue }, seconds);
  };
}

/** Feeds a worker's upstream and channel metrics; pass as the router's `observer`. */
export function observeRouting(metrics: WorkerMetrics, queue: string) {
  return {
    upstreamCall(channelId: number, seconds: number, failure?: string) {
      metrics.upstreamLatency.observe({ channel: String(channelId) }, seconds);
      if (failure) metrics.upstreamErrors.inc({ channel: String(channelId), status: failure });
    },
    failover: () => metrics.failovers.inc({ queue }),
    cooldown: (channelId: number) => metrics.cooldowns.inc({ channel: String(channelId) }),
    autoDisable: (channelId: number) => metrics.autoDisables.inc({ channel: String(channelId) }),
    usage: (tokens: number) => metrics.usageTokens.inc({ queue }, tokens),
  };
}

/**
 * The request log's writer, counted in the process's registry: rows written, rows waiting for
 * PostgreSQL (read at scrape time), and rows dropped because the buffer was full.
 */
export function requestLogMetrics(registry: Registry, buffered: () => number) {
  new Gauge({ name: 'request_log_rows_buffered', help: 'Request log rows waiting to be written to PostgreSQL', registers: [registry], collect() { this.set(buffered()); } });
  const written = new Counter({ name: 'request_log_rows_written_total', help: 'Request log rows written to PostgreSQL', registers: [registry] });
  const dropped = new Counter({ name: 'request_log_rows_dropped_total', help: 'Request log rows dropped because the buffer was full (PostgreSQL away or too slow)', registers: [registry] });
  return { onWritten: (rows: number) => written.inc(rows), onDropped: (rows: number) => dropped.inc(rows) };
}
