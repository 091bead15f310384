/**
 * Bytes of model request bodies in flight: received, held while the job waits and runs, and
 * given back when the answer ends (or the client leaves). Each key may hold `perKeyBytes`, all
 * the keys of a user together `perUserBytes` (past either, 429), and the whole gateway
 * `totalBytes` (past it, 503), all with Retry-After. Decided
 * before a byte of the body is read: from Content-Length, or for a body without one (chunked)
 * from the route's body limit, the most it may be, until it ends and is counted.
 *
 * Memory follows bytes, not requests: a body is held as text, as its parsed value and as the
 * job's JSON (and in Redis until a worker takes it), so these budgets bound what one key, and
 * everyone, can make the gateway and Redis hold, whatever the number of requests.
 */
import { Transform, type Readable } from 'node:stream';
import type { preParsingAsyncHookHandler } from 'fastify';
import { overloaded, rateLimited } from '@gateway/contracts';
import type { UserBodyBudget } from '@gateway/admission';
import { UNPARSED_METHODS } from '../http/content-encoding.ts';

export interface BodyBudgetOptions {
  /** Body bytes one API key may have in flight on this gateway (BODY_BUDGET_PER_KEY_BYTES). */
  perKeyBytes: number;
  /**
   * Body bytes all the keys of one user may have in flight (BODY_BUDGET_PER_USER_BYTES): a user
   * that made ten keys held 250 of the gateway's 256 MiB with bodies trickling a byte a second,
   * and every other user got 503. With a shared budget (Redis), on every gateway and in the
   * user's batches together; on this gateway alone while Redis is away.
   */
  perUserBytes: number;
  /** Body bytes all keys together may have in flight on this gateway (BODY_BUDGET_BYTES). */
  totalBytes: number;
  /** How long this gateway's lease on a slice of a user's budget counts unless renewed (BODY_LEASE_TTL_MS). */
  userLeaseTtlMs?: number;
  /** What a body without a Content-Length takes until it ends, on a route without a limit of its own. */
  defaultBodyLimit: number;
}

export class BodyBudget {
  private readonly options: BodyBudgetOptions;
  readonly defaultBodyLimit: number;
  private total = 0;
  private readonly perKey = new Map<number, number>();
  private readonly perUser = new Map<number, number>();

  private readonly shared: UserBodyBudget | undefined;

  constructor(options: BodyBudgetOptions, shared?: UserBodyBudget) {
    this.options = options;
    this.defaultBodyLimit = options.defaultBodyLimit;
    this.shared = shared;
  }

  /** Bytes in flight now, in all and for one key (for tests and metrics). */
  held(keyId?: number): number {
    return keyId === undefined ? this.total : (this.perKey.get(keyId) ?? 0);
  }

  /** Takes `bytes` for the key and its user, or throws 429 (the key's or the user's budget) or 503 (the gateway's). */
  async take(holder: BodyHolder, bytes: number): Promise<void> {
    const mine = this.perKey.get(holder.tokenId) ?? 0;
    const users = this.perUser.get(holder.userId) ?? 0;
    // A key holding nothing may always send one body up to the body limit, whatever its budget.
    if (mine > 0 && mine + bytes > this.options.perKeyBytes) {
      throw rateLimited(`this API key has ${mine} bytes of request bodies in flight; past ${this.options.perKeyBytes} (BODY_BUDGET_PER_KEY_BYTES) wait for some to finish`, 1);
    }
    if (users > 0 && users + bytes > this.options.perUserBytes) throw this.userRefusal(users);
    if (this.total > 0 && this.total + bytes > this.options.totalBytes) {
      throw overloaded('the gateway holds as many request bytes as it may (BODY_BUDGET_BYTES); retry shortly');
    }
    this.perKey.set(holder.tokenId, mine + bytes);
    this.perUser.set(holder.userId, users + bytes);
    this.total += bytes;
    if (!this.shared) return;
    let refused: number | undefined;
    try {
      refused = await this.shared.take(holder.userId, bytes, this.options.perUserBytes);
    } catch {
      return; // Redis away: this gateway's own count of the user stands alone
    }
    if (refused === undefined) return;
    this.giveHere(holder, bytes);
    throw this.userRefusal(refused);
  }

  private userRefusal(held: number) {
    return rateLimited(`this user's API keys and batches have ${held} bytes of request bodies in flight; past ${this.options.perUserBytes} (BODY_BUDGET_PER_USER_BYTES) wait for some to finish`, 1);
  }

  give(holder: BodyHolder, bytes: number): void {
    if (bytes <= 0) return;
    this.giveHere(holder, bytes);
    // Not more than this gateway holds in the shared count (a body taken while Redis was away
    // is not in it).
    this.shared?.give(holder.userId, Math.min(bytes, this.shared.heldBy(holder.userId)));
  }

  private giveHere(holder: BodyHolder, bytes: number): void {
    less(this.perKey, holder.tokenId, bytes);
    less(this.perUser, holder.userId, bytes);
    this.total = Math.max(0, this.total - bytes);
  }
}

/** Whose body it is: its key and the key's user. */
export interface BodyHolder { tokenId: number; userId: number }

function less(held: Map<number, number>, id: number, bytes: number): void {
  const left = (held.get(id) ?? 0) - bytes;
  if (left > 0) held.set(id, left);
  else held.delete(id);
}

/**
 * A `preParsing` hook (after the API-key hook): charges the body to the key's and the gateway's
 * budgets, and gives it back when the response is over.
 */
export function bodyBudgetHook(budget: BodyBudget): preParsingAsyncHookHandler {
  return async (request, reply, payload) => {
    const holder = request.keyHolder;
    const length = request.headers['content-length'];
    // A GET or HEAD body is never read (Fastify parses none): nothing to hold for it.
    if (!holder || (length === undefined && request.headers['transfer-encoding'] === undefined) || UNPARSED_METHODS.has(request.method)) return payload;
    let held = 0;
    let closed = false;
    reply.raw.once('close', () => {
      closed = true;
      budget.give(holder, held);
      held = 0;
    });
    // The response closed while the take was under way (the client left): given back at once.
    const taken = async (bytes: number) => {
      await budget.take(holder, bytes);
      if (closed) budget.give(holder, bytes);
      else held = bytes;
    };
    const declared = Number(length);
    // A compressed body's length says nothing of what it inflates to (3 KB of gzip can hold
    // 3 MB): it is held like one without a length, and counted as it is decompressed.
    const encoding = request.headers['content-encoding']?.trim().toLowerCase();
    const compressed = encoding !== undefined && encoding !== '' && encoding !== 'identity';
    if (length !== undefined && Number.isSafeInteger(declared) && !compressed) {
      // Past the budget this throws before a byte is read; Node reads the refused body and
      // drops it after the answer, so the client (still sending) reads its 429, not a reset.
      await taken(declared);
      return payload;
    }
    // No length (or a compressed one): the body may be as large as the route allows, so that much is taken before it
    // is read, and what it did not use is given back when it ends. Counting it only as it came
    // would let 100 bodies at once each take a slice of the budget and none get to its end.
    const limit = request.routeOptions.bodyLimit ?? budget.defaultBodyLimit;
    // The take may wait on Redis (past this gateway's lease of the user's budget): an error of the body meanwhile
    // (gzip that is not gzip) is kept for the stream below, not lost with the request left hanging.
    const source = payload as Readable & { receivedEncodedLength?: number };
    let failed: Error | undefined;
    const early = (error: Error) => { failed = error; };
    source.once('error', early);
    await taken(limit);
    source.off('error', early);
    let received = 0;
    const counted = new Transform({
      transform(chunk: Buffer, _encoding, done) {
        received += chunk.length;
        done(null, chunk);
      },
      flush(done) {
        if (held > received) {
          budget.give(holder, held - received);
          held = received;
        }
        done();
      },
    });
    // A decompressed body tells Fastify how many bytes came on the wire, for its Content-Length check.
    if (source.receivedEncodedLength !== undefined) Object.defineProperty(counted, 'receivedEncodedLength', { get: () => source.receivedEncodedLength });
    // And a body refused while it comes (it inflates past the limit, or is not what its coding
    // says) fails the request with its own error: `pipe` alone would leave it waiting.
    if (failed) counted.destroy(failed);
    else source.once('error', (error) => counted.destroy(error));
    // A route that answers without reading the body (a 415 for its Content-Type) leaves nobody
    // listening: its refusal, or the client's reset, must not become an uncaught error that ends
    // the gateway. A route that reads it hears the error itself.
    counted.on('error', () => {});
    return source.pipe(counted);
  };
}
