import type { JobClient } from '@gateway/queue';
import type { BodyBudget } from '../intake/body-budget.ts';
import type { FairTurns } from '../intake/fair-turns.ts';
import type { IntakeWindow } from '../intake/intake-window.ts';
import type { ModelAdmission } from '@gateway/admission';
import type { ApiKeyAuth } from '../auth/api-key.ts';
import type { ModelCatalog } from './model-catalog.ts';
import { streamWindowOf, type RequestLogSink } from './model-relay.ts';
import type { RefusalLog } from '../refusals/refusal-log.ts';

/** What both model wire formats' plugins are given. */
export interface ModelApiOptions {
  jobs: JobClient;
  apiKeys: ApiKeyAuth;
  admission: ModelAdmission;
  /** Turns of the gateway's event loop, shared fairly between users (fair-turns.ts). */
  turns: FairTurns;
  /** At most so many requests of one user between their admission gate and their enqueue (intake-window.ts). */
  intake?: IntakeWindow;
  catalog: ModelCatalog;
  /** How long a request may wait for its answer (REQUEST_TIMEOUT_MS). */
  timeoutMs: number;
  /** The largest model request body (BODY_LIMIT_BYTES). */
  bodyLimitBytes: number;
  /** Body bytes in flight, per key and in all. */
  bodyBudget: BodyBudget;
  /** Bytes of one answer buffered for its client (RESPONSE_BUFFER_BYTES). */
  responseBufferBytes: number;
  /** Rows for the requests that end in the gateway without running on a worker. */
  requestLog?: RequestLogSink;
  /** Rows for the requests these routes refuse, sampled. */
  refusals?: RefusalLog;
}

/** What every model route hands the relay from the plugin's options, besides its own job. */
export function relayOptionsOf(options: ModelApiOptions) {
  return {
    jobs: options.jobs,
    timeoutMs: options.timeoutMs,
    responseBufferBytes: options.responseBufferBytes,
    streamWindowChars: streamWindowOf(options.responseBufferBytes),
    requestLog: options.requestLog,
    admission: options.admission,
    intake: options.intake,
  };
}
