/**
 * Gemini's wire format under `/v1beta`, and under `/v1` as Google serves it (`@google/genai` 3.x
 * calls `/v1` by default): generateContent for speech and chat models, embeddings, and the
 * Gemini model list. Its errors (and unknown
 * `/v1beta` paths) answer in Gemini's error body; its routes take an API key in a Bearer header or
 * Gemini's own `x-goog-api-key` (or `?key=`).
 *
 * Under `/v1` it shares the prefix with OpenAI's routes: `POST /v1/models/{model}:…` is Gemini's
 * alone, and `GET /v1/models[/…]` is Gemini's list for a request that presents its key the Gemini
 * way (the `wire` route constraint, `wire-constraint.ts`), OpenAI's otherwise.
 */
import type { FastifyInstance } from 'fastify';
import { bodyBudgetHook } from '../intake/body-budget.ts';
import { apiKeyHook } from '../auth/request-auth.ts';
import { geminiFormat, useErrorFormat } from '../http/error-formats.ts';
import type { ModelRouteOptions } from '../models/model-endpoint-route.ts';
import { logRefusals, type RefusalOptions } from '../refusals/refusal-hooks.ts';
import { geminiModelRoutes } from '../models/gemini-door.ts';
import { geminiModels, modelListRoutes } from '../models/model-list-routes.ts';

export async function geminiApi(app: FastifyInstance, options: ModelRouteOptions & RefusalOptions & { version: 'v1' | 'v1beta' }): Promise<void> {
  const besideOpenAI = options.version === 'v1';
  useErrorFormat(app, geminiFormat, { notFound: !besideOpenAI });
  // The key is checked in a context of its own, so an unknown /v1beta path is a 404, not a 401.
  await app.register(async (routes) => {
    routes.addHook('onRequest', apiKeyHook(options.apiKeys, { googleHeader: true }));
    logRefusals(routes, options.refusals);
    routes.addHook('preParsing', bodyBudgetHook(options.bodyBudget));
    geminiModelRoutes(routes, options);
    modelListRoutes(routes, geminiModels(options.version), options.catalog, besideOpenAI ? { wire: 'gemini' } : undefined);
  });
}
