/**
 * The protocol of every model job, in one place. An operation (a completion, a chat, an
 * embedding, Gemini's generateContent, a speech) says only how to call one chosen channel and
 * what came back: a whole answer with its usage, or pieces for the client as they come, each
 * with the usage so far. The relay takes the router's attempts one at a time, calls, commits the
 * attempt at the first piece sent (the router fails over only before it), sends the pieces, and
 * tells the router how the attempt went, with the usage to charge. The router never calls into
 * the worker; the worker's operations never call into the router.
 */
import type { JobContext } from '@gateway/queue';
import type { ModelRequest, ModelRouter, RouteTarget, Usage } from '@gateway/routing';

/** A reply read whole: the job's result, and what it is charged. */
export interface WholeAnswer<R> {
  whole: R;
  usage: Usage;
}

/** One piece of a streamed reply. */
export interface Piece {
  /** What the client receives (a chunk's JSON, base64 audio); none for a piece that only counts. */
  data?: string;
  /** The usage so far: reported by the upstream, or estimated from what was streamed. */
  usage?: Usage;
  /**
   * The upstream reported it used this: charged however the request ends from here (a client
   * that left before the usage came is still charged it).
   */
  used?: boolean;
}

/** A reply streamed: its pieces as they come, and the job's result once they are all sent. */
export interface StreamedAnswer<R> {
  pieces: AsyncIterable<Piece>;
  end(): R;
}

export type ModelAnswer<R> = WholeAnswer<R> | StreamedAnswer<R>;

/** Calls an operation on one channel; throws `UpstreamError` when the upstream failed. */
export type ModelCall<R> = (target: RouteTarget) => Promise<ModelAnswer<R>>;

/**
 * Serves one model job through the router's attempts; resolves with the job's result.
 * `promptUsage`: the request's prompt as the worker counts it, what an attempt that failed with
 * nothing counted yet is charged when the router rules the upstream did the work (a reply refused
 * for its size: the upstream made it, and bills it).
 */
export async function relayModelJob<R>(
  router: ModelRouter, request: ModelRequest, context: Pick<JobContext<unknown>, 'sendChunk' | 'begin'>, call: ModelCall<R>, promptUsage?: () => Usage,
): Promise<R> {
  for await (const attempt of router.attempts(request)) {
    let usage: Usage | undefined;
    let answer: ModelAnswer<R>;
    let committed = false;
    // Past this point the job is not withdrawn: its upstream is being called.
    const unbegun = context.begin();
    try {
      answer = await call(attempt.target);
      if (!('whole' in answer)) {
        for await (const piece of answer.pieces) {
          if (piece.usage) usage = piece.usage;
          if (piece.used) {
            attempt.commit();
            committed = true;
          }
          if (piece.data === undefined) continue;
          attempt.commit();
          committed = true;
          await context.sendChunk(piece.data);
        }
      }
    } catch (error) {
      // Resolves when another channel may be tried; rejects with the request's error when not.
      await attempt.fail(error, usage ?? promptUsage?.());
      // Nothing of this attempt reached the client or was used: the job may be withdrawn again
      // while it waits for the next channel.
      if (!committed) unbegun();
      continue;
    }
    // Outside the try: a failure of the success's own bookkeeping is not the upstream's.
    if ('whole' in answer) {
      attempt.succeed(answer.usage);
      return answer.whole;
    }
    attempt.succeed(usage);
    return answer.end();
  }
  throw new Error('the router ended its attempts with neither an answer nor an error');
}
