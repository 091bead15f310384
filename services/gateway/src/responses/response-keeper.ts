/**
 * What a Responses request keeps of its answer (`store`, the default): the response and its
 * input, saved before the client has the end of it (the relay's `settle`), so the client's next
 * request finds it. The final response comes whole from a reply, or from a stream's
 * `response.completed` event (`keep`). For a background run the response keeps the id its
 * client was given, and its status moves to `in_progress` with the stream's first event.
 */
import type { FastifyBaseLogger } from 'fastify';
import type { ResponsesResponse } from '@gateway/contracts';
import type { ResponseStore, StoredItem } from '@gateway/database';
import type { BackgroundRun } from './background-runs.ts';
import { EventLog } from './event-log.ts';

export interface ResponseKeeper {
  /** For the relay: saves the final response; unset when nothing is kept. */
  settle?: (whole?: string) => Promise<void>;
  /** A stream's final response, as it passes. */
  keep(response: ResponsesResponse): void;
  /** A stream's event passed, numbered (the first marks a background run in progress; a streamed one records each). */
  passed(data: string, seq: number | undefined): void;
}

/** What a response is kept with: its user, its input, and the conversation it is a turn of. */
export interface KeptWith {
  userId: number;
  inputItems: StoredItem[];
  conversation?: string;
}

export function responseKeeper(store: ResponseStore | undefined, keeps: boolean, kept: KeptWith, run: BackgroundRun | undefined, log: FastifyBaseLogger): ResponseKeeper {
  const { userId, inputItems } = kept;
  let final: ResponsesResponse | undefined;
  let begun = false;
  const owned = (response: ResponsesResponse) => (run ? { ...response, id: run.id } : response);
  const events = run?.streamed && store ? new EventLog(store, run.id, log) : undefined;
  return {
    settle: store && keeps
      ? async (whole?: string) => {
        const response = whole === undefined ? final : (JSON.parse(whole) as ResponsesResponse);
        // Every event is recorded before the response ends: a follower that sees it ended has read them all.
        await events?.drained();
        if (response) await store.save(userId, owned(response), inputItems, kept.conversation);
      }
      : undefined,
    keep: (response) => {
      final = response;
    },
    passed: (data, seq) => {
      if (events && seq !== undefined) events.add(seq, run ? ownedEvent(data, run.id) : data);
      if (begun || !run || !store) return;
      begun = true;
      void store.setStatus(run.id, userId, 'in_progress').catch((error: unknown) => log.warn({ err: error }, 'a background response\'s status could not be stored'));
    },
  };
}

/** An event as a background response's client sees it: the response it carries under the id the client was given. */
function ownedEvent(data: string, id: string): string {
  if (!data.includes('"response":{')) return data;
  const event = JSON.parse(data) as { response?: { id?: string } };
  if (event.response) event.response.id = id;
  return JSON.stringify(event);
}
