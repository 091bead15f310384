/**
 * The OpenAI wire format under `/v1`: completions, chat completions, responses, embeddings and speech, the OpenAI
 * model list, and the Files and Batch APIs. Its errors and
 * unknown `/v1` paths answer in OpenAI's error body; its routes take an API key in a Bearer header.
 */
import type { FastifyInstance } from 'fastify';
import { bodyBudgetHook } from '../intake/body-budget.ts';
import { apiKeyHook } from '../auth/request-auth.ts';
import { openaiFormat, useErrorFormat } from '../http/error-formats.ts';
import { logRefusals, type RefusalOptions } from '../refusals/refusal-hooks.ts';
import { modelEndpointRoutes, type ModelRouteOptions } from '../models/model-endpoint-route.ts';
import { openaiDoor } from '../models/openai-door.ts';
import { openaiResponsesRoutes } from '../responses/responses-routes.ts';
import { storedResponseRoutes, type StoredResponsesOptions } from '../responses/stored-response-routes.ts';
import { BackgroundRuns } from '../responses/background-runs.ts';
import { FileStore, ResponseStore } from '@gateway/database';
import { modelListRoutes, openaiModels } from '../models/model-list-routes.ts';
import { batchRoutes } from '../batches/batch-routes.ts';
import { fileRoutes } from '../batches/file-routes.ts';
import { databaseOf, type BatchApiOptions } from '../batches/batch-api-options.ts';

export async function openaiApi(app: FastifyInstance, options: ModelRouteOptions & RefusalOptions & { batch: BatchApiOptions; responses: StoredResponsesOptions }): Promise<void> {
  const { database, retentionDays } = options.responses;
  const responseStore = database ? () => new ResponseStore(database, retentionDays) : undefined;
  const background = new BackgroundRuns();
  useErrorFormat(app, openaiFormat, {
    notFoundHint: 'the OpenAI routes are POST /v1/completions, /v1/chat/completions, /v1/responses, /v1/embeddings, /v1/audio/speech, GET /v1/models, and /v1/files and /v1/batches (Anthropic\'s are POST /v1/messages and /v1/messages/count_tokens; Gemini\'s /v1/models/{model}:generateContent, :streamGenerateContent, :embedContent, :batchEmbedContents and /v1beta/…)',
  });
  // The key is checked in a context of its own, so an unknown /v1 path is a 404, not a 401.
  await app.register(async (routes) => {
    routes.addHook('onRequest', apiKeyHook(options.apiKeys));
    logRefusals(routes, options.refusals);
    routes.addHook('preParsing', bodyBudgetHook(options.bodyBudget));
    // Every OpenAI entry of the endpoint table, /v1/responses on a route of its own.
    modelEndpointRoutes(routes, options, 'openai', openaiDoor);
    openaiResponsesRoutes(routes, options, {
      store: responseStore,
      background,
      userMaxBytes: options.batch.files.userMaxBytes,
      keptBytes: database ? async (userId) => (await new FileStore(database).usage(userId)).bytes : undefined,
    });
    storedResponseRoutes(routes, () => new ResponseStore(databaseOf(options.batch), retentionDays), background, options.timeoutMs);
    modelListRoutes(routes, openaiModels, options.catalog);
  });
  // Files and batches: the same key, but no model request's body budget (an upload streams to
  // PostgreSQL, up to FILE_MAX_BYTES).
  await app.register(async (routes) => {
    routes.addHook('onRequest', apiKeyHook(options.apiKeys));
    logRefusals(routes, options.refusals);
    // A context of its own: only the Files API takes multipart forms.
    await routes.register(fileRoutes, options.batch);
    batchRoutes(routes, options.batch);
  });
}
