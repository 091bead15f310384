/**
 * `POST /v1/completions`, the OpenAI legacy completions wire format: validate the body with the
 * one completion schema, check the key (authenticated by the OpenAI plugin's hook) may use the
 * model, and relay the completion worker's answer.
 */
import type { FastifyInstance } from 'fastify';
import { completionRequestSchema, completionWorstCase, parseOrThrow, QueueName, type CompletionJobPayload } from '@gateway/contracts';
import { keyHolderOf } from '../auth/request-auth.ts';
import type { ModelApiOptions } from '../plugins/model-api-options.ts';
import { openaiFormat } from '../error-formats.ts';
import { admissionGate, relayModelJob, serverSentEvents } from '../model-relay.ts';

const openaiEventStream = serverSentEvents(openaiFormat, { doneMarker: '[DONE]' });

export function completionRoutes(app: FastifyInstance, options: ModelApiOptions): void {
  app.post('/completions', { bodyLimit: options.bodyLimitBytes, onRequest: admissionGate(options.admission) }, async (request, reply) => {
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
      responseBufferBytes: options.responseBufferBytes,
      admission: options.admission,
      holder,
      worstCase: completionWorstCase(body),
      stream: body.stream === true ? openaiEventStream : undefined,
    });
  });
}
