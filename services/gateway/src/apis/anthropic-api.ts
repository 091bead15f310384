/**
 * Anthropic's wire format under `/v1`: the Messages API (`/v1/messages`,
 * `/v1/messages/count_tokens`). Its errors answer in Anthropic's error body and statuses
 * (`anthropicFormat`); its routes take an API key in `x-api-key`, as Anthropic's SDKs and
 * Claude Code send it, or in a Bearer header. It shares the `/v1` prefix with OpenAI's routes,
 * which answer the prefix's unknown paths.
 */
import type { FastifyInstance } from 'fastify';
import { bodyBudgetHook } from '../intake/body-budget.ts';
import { apiKeyHook } from '../auth/request-auth.ts';
import { anthropicFormat, useErrorFormat } from '../http/error-formats.ts';
import { logRefusals, type RefusalOptions } from '../refusals/refusal-hooks.ts';
import { anthropicDoor } from '../models/anthropic-door.ts';
import { modelEndpointRoutes, type ModelRouteOptions } from '../models/model-endpoint-route.ts';

export async function anthropicApi(app: FastifyInstance, options: ModelRouteOptions & RefusalOptions): Promise<void> {
  useErrorFormat(app, anthropicFormat, { notFound: false });
  // Anthropic's SDKs read a reply's id from `request-id` (`_request_id`, and in their errors): the gateway's request id.
  app.addHook('onRequest', async (request, reply) => {
    reply.header('request-id', request.id);
  });
  await app.register(async (routes) => {
    routes.addHook('onRequest', apiKeyHook(options.apiKeys, { anthropicHeader: true }));
    logRefusals(routes, options.refusals);
    routes.addHook('preParsing', bodyBudgetHook(options.bodyBudget));
    modelEndpointRoutes(routes, options, 'anthropic', anthropicDoor);
  });
}
