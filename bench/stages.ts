/**
 * Where a request's time goes, stage by stage, from its trace: the gateway's server span and its
 * children (admission, the enqueue, the wait for the reply) and the worker's (its processing,
 * the wait for a channel slot, the upstream call, the reply to the gateway). Each stage is the
 * time between two of those spans' edges, so the stages of one request add up to its server
 * span; what the client saw beyond that is the HTTP in and out of the gateway.
 *
 * Means, not medians: OpenTelemetry's JavaScript SDK starts a span at `Date.now()`, a whole
 * millisecond, and times its length on the high-resolution clock, so an edge of one span against
 * another's is off by up to a millisecond either way, evenly: over a thousand requests the error
 * of a mean is a few microseconds, where a median keeps it. A span's own length is exact.
 */
import type { ReceivedSpan } from '@gateway/testkit';

export interface StageRow {
  stage: string;
  /** Where the time is spent: a process, or between two. */
  where: string;
  meanUs: number;
}

/** The spans of one request, by role. */
interface RequestSpans {
  server: ReceivedSpan;
  admission?: ReceivedSpan;
  enqueue?: ReceivedSpan;
  waitForReply?: ReceivedSpan;
  process?: ReceivedSpan;
  slotWait?: ReceivedSpan;
  upstream?: ReceivedSpan;
  reply?: ReceivedSpan;
}

const SERVER = 2;
const CLIENT = 3;

function requestsOf(spans: ReceivedSpan[]): RequestSpans[] {
  const byTrace = new Map<string, ReceivedSpan[]>();
  for (const span of spans) byTrace.set(span.traceId, [...(byTrace.get(span.traceId) ?? []), span]);
  const requests: RequestSpans[] = [];
  for (const trace of byTrace.values()) {
    const server = trace.find((s) => s.kind === SERVER);
    if (!server) continue;
    const named = (name: string) => trace.find((s) => s.name === name);
    requests.push({
      server,
      admission: named('admission'),
      enqueue: named('enqueue'),
      waitForReply: named('wait for reply'),
      process: trace.find((s) => s.name.startsWith('process ')),
      slotWait: named('channel slot wait'),
      upstream: trace.find((s) => s.kind === CLIENT),
      reply: named('reply'),
    });
  }
  return requests;
}

const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / Math.max(1, values.length);

/** Nanoseconds from `from` to `to`, or undefined where either edge is missing. */
const between = (from: bigint | undefined, to: bigint | undefined): number | undefined =>
  from === undefined || to === undefined ? undefined : Number(to - from);

/**
 * The stages of the requests traced in `spans`, in the order a request passes them, with the
 * client's own mean (`clientMeanUs`, from the load generator) to price the HTTP around them.
 */
export function stageTable(spans: ReceivedSpan[], clientMeanUs: number): StageRow[] {
  const requests = requestsOf(spans).filter((r) => r.admission && r.enqueue && r.waitForReply && r.process && r.upstream && r.reply);
  const stages: [string, string, (r: RequestSpans) => number | undefined][] = [
    ['body read, parsed and validated; key and model checked', 'gateway', (r) => between(r.server.startNs, r.admission!.startNs)],
    ['admission (intake window, quota and caps)', 'gateway', (r) => between(r.admission!.startNs, r.admission!.endNs)],
    ['admission → enqueue (the job built)', 'gateway', (r) => between(r.admission!.endNs, r.enqueue!.startNs)],
    ['enqueue (the add to the queue)', 'gateway ↔ Redis', (r) => between(r.enqueue!.startNs, r.enqueue!.endNs)],
    ['queued → a worker has taken it', 'Redis → worker', (r) => between(r.enqueue!.endNs, r.process!.startNs)],
    ['taken → channel chosen, slot free', 'worker', (r) => between(r.process!.startNs, (r.slotWait ?? r.upstream)!.startNs)],
    ['channel slot wait', 'worker ↔ Redis', (r) => (r.slotWait ? between(r.slotWait.startNs, r.slotWait.endNs) : 0)],
    ['slot → upstream call begins (request built)', 'worker', (r) => (r.slotWait ? between(r.slotWait.endNs, r.upstream!.startNs) : 0)],
    ['upstream call (the upstream\'s time and its HTTP)', 'worker ↔ upstream', (r) => between(r.upstream!.startNs, r.upstream!.endNs)],
    ['upstream answered → reply sent', 'worker', (r) => between(r.upstream!.endNs, r.reply!.startNs)],
    ['reply (to the gateway, through Redis)', 'worker → Redis', (r) => between(r.reply!.startNs, r.reply!.endNs)],
    ['reply sent → the gateway has it', 'Redis → gateway', (r) => between(r.reply!.endNs, r.waitForReply!.endNs)],
    ['the gateway has it → answer written', 'gateway', (r) => between(r.waitForReply!.endNs, r.server.endNs)],
  ];
  const rows: StageRow[] = stages.map(([stage, where, of]) => {
    const values = requests.map(of).filter((v): v is number => v !== undefined).map((ns) => ns / 1000);
    return { stage, where, meanUs: mean(values) };
  });
  const server = mean(requests.map((r) => Number(r.server.endNs - r.server.startNs) / 1000));
  rows.push({ stage: 'HTTP in and out of the gateway (the client\'s mean less the server span\'s)', where: 'client ↔ gateway', meanUs: clientMeanUs - server });
  rows.push({ stage: `the whole request as its client saw it (${requests.length} requests)`, where: 'client', meanUs: clientMeanUs });
  return rows;
}
