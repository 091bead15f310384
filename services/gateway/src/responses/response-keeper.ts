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

export interface ResponseKeeper {
  /** For the relay: saves the final response; unset when nothing is kept. */
  settle?: (whole?: string) => Promise<void>;
  /** A stream's final response, as it passes. */
  keep(response: ResponsesResponse): void;
  /** A stream's event passed (the first marks a background run in progress). */
  passed(): void;
}

export function responseKeeper(store: ResponseStore | undefined, keeps: boolean, userId: number, inputItems: StoredItem[], run: BackgroundRun | undefined, log: FastifyBaseLogger): ResponseKeeper {
  let final: ResponsesResponse | undefined;
  let begun = false;
  const owned = (response: ResponsesResponse) => (run ? { ...response, id: run.id } : response);
  return {
    settle: store && keeps
      ? async (whole?: string) => {
        const response = whole === undefined ? final : (JSON.parse(whole) as ResponsesResponse);
        if (response) await store.save(userId, owned(response), inputItems);
      }
      : undefined,
    keep: (response) => {
      final = response;
    },
    passed: () => {
      if (begun || !run || !store) return;
      begun = true;
      void store.setStatus(run.id, userId, 'in_progress').catch((error: unknown) => log.warn({ err: error }, 'a background response\'s status could not be stored'));
    },
  };
}
