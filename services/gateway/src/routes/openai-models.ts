/**
 * The OpenAI model routes (`POST /v1/completions`, `/v1/chat/completions`, `/v1/embeddings`),
 * one entry each in `openaiEndpoints` (@gateway/contracts), which batches run too: validate the
 * body with the endpoint's schema, check the key (authenticated by the OpenAI plugin's hook) may
 * use the model, and relay the completion worker's answer, whole or as server-sent events.
 */
import type { FastifyInstance } from 'fastify';
import { badRequest, openaiEndpoints, parseOrThrow, type ChatRequest, type CompletionJobPayload, type OpenAIEndpoint } from '@gateway/contracts';
import { callerOf } from '@gateway/admission';
import { chatOpening, conversationOf } from '@gateway/routing';
import { keyHolderOf } from '../auth/request-auth.ts';
import { relayOptionsOf, type ModelApiOptions } from '../plugins/model-api-options.ts';
import { openaiFormat } from '../error-formats.ts';
import { admissionGate, relayModelJob, serverSentEvents } from '../model-relay.ts';

const openaiEventStream = serverSentEvents(openaiFormat, { doneMarker: '[DONE]' });

export function openaiModelRoutes(app: FastifyInstance, options: ModelApiOptions): void {
  for (const [path, endpoint] of Object.entries(openaiEndpoints) as [string, OpenAIEndpoint][]) {
    app.post(path.replace(/^\/v1/, ''), { bodyLimit: options.bodyLimitBytes, onRequest: admissionGate(options) }, async (request, reply) => {
      const holder = keyHolderOf(request);
      const body = parseOrThrow(endpoint.schema, request.body);
      if (body.stream === true && !endpoint.streams) {
        throw badRequest(`${path} does not stream`, 'stream');
      }
      options.apiKeys.authorizeModel(holder, body.model);
      const caller = callerOf(holder);
      // A chat's turns are one conversation by their session header or their opening messages;
      // a completion's by its session header only (a prompt has no fixed opening).
      const opening = endpoint.operation === 'chat' ? chatOpening((body as unknown as ChatRequest).messages) : {};
      const conversation = endpoint.operation === 'embeddings' ? undefined : conversationOf({ tokenId: caller.tokenId, model: body.model, headers: request.headers, ...opening });
      const payload = {
        caller: conversation ? { ...caller, conversation } : caller,
        operation: endpoint.operation,
        request: body,
      } as CompletionJobPayload;
      return relayModelJob(request, reply, {
        ...relayOptionsOf(options),
        queue: endpoint.queue,
        payload,
        holder,
        worstCase: endpoint.worstCase(body),
        stream: body.stream === true ? openaiEventStream : undefined,
        // The endpoint's schema gives a valid body back as it came (openai-batch.ts).
        requestJson: request.jsonBytes ?? undefined,
      });
    });
  }
}
