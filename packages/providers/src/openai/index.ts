/**
 * The OpenAI-style provider: `{base_url}/v1/completions` with `Authorization: Bearer <key>`,
 * whole or streamed. One entry per operation: its endpoint (`api.ts`) and its mapping
 * (`complete.ts`); `callUpstream` and `streamUpstream` do the rest.
 */
import { openaiApi } from './api.ts';
import { completions } from './complete.ts';

export const openai = {
  completions: { api: openaiApi, endpoint: openaiApi.endpoints.completions, mapping: completions },
};
