/**
 * The request log's rows for the gateway's refusals (a bad key, a model the key may not use, an
 * invalid body, a quota or rate limit, an overloaded gateway), sampled so that a flood cannot
 * grow the log or load PostgreSQL: in each window, the first refusal of one credential (a key's
 * id, an unknown key's hash, or the address when no key came), status and reason (the error's
 * code and the field at fault) is a row, with its request id; its repeats only raise that row's
 * `count` (the row is written again, the same key, at most every `countEveryMs`). Unknown keys from one address have rows of their own up to
 * `keysPerAddress`, then one row per status and reason counts the rest of them; and past
 * `rowsPerWindow` rows in a window, one row per status and reason counts every further refusal.
 * Only `record` is on the request's path: a few map operations, and the writer's buffer.
 */
import { randomUUID } from 'node:crypto';
import type { RequestLogRow } from '@gateway/contracts';
import { maskSecret, sha256 } from '@gateway/store';
import type { RequestLogSink } from '../models/model-relay.ts';

export interface RefusalLogOptions {
  /** REFUSAL_LOG_WINDOW_MS. */
  windowMs: number;
  /** REFUSAL_LOG_ROWS: new rows in a window, at most. */
  rowsPerWindow: number;
  /** REFUSAL_LOG_KEYS_PER_ADDRESS: unknown keys of one address with rows of their own in a window. */
  keysPerAddress: number;
  /** A row's count is written again at most this often while it grows. Default 5,000 (or the window, if shorter). */
  countEveryMs?: number;
  now?: () => number;
}

/** Who was refused: a key the gateway knows, a key it does not (in clear only here, hashed at once), or nobody. */
export type RefusedCaller =
  | { kind: 'key'; userId: number; tokenId: number; tokenName: string; priority: 'interactive' | 'batch' }
  | { kind: 'unknown-key'; key: string }
  | { kind: 'none' };

export interface Refusal {
  requestId: string;
  /** Epoch ms it arrived. */
  arrivedAt: number;
  status: number;
  code: string;
  /** The field at fault, for a 400: part of the reason, so that two mistakes of one key are two rows. */
  param?: string | null;
  message: string;
  route: string;
  model: string;
  address: string;
  caller: RefusedCaller;
  streamed: boolean;
  totalMs: number;
  /** Its trace, when it was sampled: the row of the first refusal of a window carries it. */
  traceId?: string;
}

interface Sampled {
  row: RequestLogRow;
  count: number;
  /** The count last handed to the writer. */
  written: number;
}

/** Shown for a row that counts many credentials or addresses. */
export const MANY = '*';

export class RefusalLog {
  private readonly sink: RequestLogSink;
  private readonly options: RefusalLogOptions;
  private readonly now: () => number;
  private sampled = new Map<string, Sampled>();
  /** Unknown keys of each address with rows of their own in this window. */
  private keysOfAddress = new Map<string, number>();
  private rows = 0;
  private windowStart: number;
  private timer: NodeJS.Timeout | undefined;

  constructor(sink: RequestLogSink, options: RefusalLogOptions) {
    this.sink = sink;
    this.options = options;
    this.now = options.now ?? Date.now;
    this.windowStart = this.now();
  }

  /** Starts writing the counts that grew, on a timer. */
  start(): this {
    const every = Math.min(this.options.countEveryMs ?? 5_000, this.options.windowMs);
    this.timer = setInterval(() => this.writeCounts(), every);
    this.timer.unref();
    return this;
  }

  record(refusal: Refusal): void {
    this.roll();
    const reason = `${refusal.status}|${refusal.code}|${refusal.param?.slice(0, 64) ?? ''}`;
    const { caller } = refusal;
    const identity = caller.kind === 'key' ? `t${caller.tokenId}` : caller.kind === 'unknown-key' ? `k${sha256(caller.key)}` : `a${refusal.address}`;
    const own = this.sampled.get(`${identity}|${reason}`);
    if (own) {
      own.count++;
      return;
    }
    if (this.rows >= this.options.rowsPerWindow) return this.count(`*|${reason}`, refusal, { client_ip: MANY, credential: MANY, anyone: true });
    if (caller.kind === 'unknown-key') {
      const keys = this.keysOfAddress.get(refusal.address) ?? 0;
      if (keys >= this.options.keysPerAddress) return this.count(`a${refusal.address}|*|${reason}`, refusal, { client_ip: refusal.address, credential: MANY, anyone: true });
      this.keysOfAddress.set(refusal.address, keys + 1);
    }
    this.count(`${identity}|${reason}`, refusal, { client_ip: refusal.address, credential: credentialOf(caller), anyone: false });
  }

  /** One more refusal on the row of `key`, made from `refusal` if it has none yet this window. */
  private count(key: string, refusal: Refusal, shown: { client_ip: string; credential?: string; anyone: boolean }): void {
    const existing = this.sampled.get(key);
    if (existing) {
      existing.count++;
      return;
    }
    const row = rowOf(refusal, shown);
    this.sampled.set(key, { row, count: 1, written: 1 });
    // The rows counting many share a handful of keys (one per status and reason), so the cap is
    // the other rows'.
    if (!(shown.anyone && key.startsWith('*|'))) this.rows++;
    this.sink.record(row);
  }

  /** At the window's end: the last counts written, and a new window begun. */
  private roll(): void {
    const now = this.now();
    if (now - this.windowStart < this.options.windowMs) return;
    this.writeGrown();
    this.sampled = new Map();
    this.keysOfAddress = new Map();
    this.rows = 0;
    this.windowStart = now;
  }

  /** The counts that grew written, and the window rolled if it has ended. */
  writeCounts(): void {
    this.writeGrown();
    this.roll();
  }

  /** The rows whose count grew since they were last written, written again (the same row key: an update). */
  private writeGrown(): void {
    for (const entry of this.sampled.values()) {
      if (entry.count === entry.written) continue;
      entry.written = entry.count;
      this.sink.record({ ...entry.row, count: entry.count });
    }
  }

  /** Writes the last counts and stops. */
  close(): void {
    clearInterval(this.timer);
    this.writeCounts();
  }
}

/** An unknown key as the log shows it: its mask (as the console shows a key) and 8 hex digits of its SHA-256. */
export function credentialOf(caller: RefusedCaller): string | undefined {
  if (caller.kind !== 'unknown-key') return undefined;
  return `${maskSecret(caller.key)}#${sha256(caller.key).slice(0, 8)}`;
}

function rowOf(refusal: Refusal, shown: { client_ip: string; credential?: string; anyone: boolean }): RequestLogRow {
  const key = refusal.caller.kind === 'key' && !shown.anyone ? refusal.caller : undefined;
  return {
    created_at: refusal.arrivedAt,
    job_id: `refusal-${randomUUID()}`,
    request_id: refusal.requestId,
    user_id: key?.userId ?? 0,
    token_id: key?.tokenId ?? 0,
    token_name: key?.tokenName ?? '',
    route: refusal.route,
    model: refusal.model,
    attempts: [],
    status: refusal.status,
    error_code: refusal.code,
    error_message: refusal.message.slice(0, 1000),
    priority: key?.priority ?? 'interactive',
    streamed: refusal.streamed,
    prompt_tokens: 0,
    completion_tokens: 0,
    total_tokens: 0,
    quota: 0,
    total_ms: refusal.totalMs,
    count: 1,
    client_ip: shown.client_ip,
    credential: shown.credential,
    trace_id: refusal.traceId,
  };
}
