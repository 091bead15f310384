/**
 * `POST /v1/completions`, the OpenAI legacy completions wire format: authenticate the key,
 * validate the body with the one completion schema, and relay the completion worker's answer.
 */
import type { FastifyInstance } from 'fastify';
import { completionRequestSchema, parseOrThrow, QueueName, type CompletionJobPayload } from '@gateway/contracts';
import type { JobClient } from '@gateway/queue';
import type { ModelAdmission } from '../admission/model-admission.ts';
import type { ApiKeyAuth } from '../auth/api-key.ts';
import { apiKeyHook, keyHolderOf } from '../auth/request-auth.ts';
import { openaiFormat } from '../error-formats.ts';
import { relayModelJob, serverSentEvents } from '../model-relay.ts';

export interface CompletionRoutesOptions {
  jobs: JobClient;
  apiKeys: ApiKeyAuth;
  admission: ModelAdmission;
  timeoutMs: number;
  bodyLimitBytes: number;
}

const openaiEventStream = serverSentEvents(openaiFormat, { doneMarker: '[DONE]' });

export async function completionRoutes(app: FastifyInstance, options: CompletionRoutesOptions): Promise<void> {
  app.addHook('onRequest', apiKeyHook(options.apiKeys));
  app.post('/v1/completions', { bodyLimit: options.bodyLimitBytes }, async (request, reply) => {
    const holder = keyHolderOf(request);
    const body = parseOrThrow(completionRequestSchema, request.body);
    options.apiKeys.authorizeModel(holder, body.model);
    const payload: CompletionJobPayload = {
      caller: { tokenId: holder.tokenId, userId: holder.userId, group: holder.group },
      request: body,
    };
    return relayModelJob(request, reply, {
      jobs: options.jobs,
      queue: QueueName.completion,
      payload,
      timeoutMs: options.timeoutMs,
      admission: options.admission,
      holder,
      stream: body.stream === true ? openaiEventStream : undefined,
    });
  });
}
