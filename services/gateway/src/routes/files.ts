import type { FastifyInstance } from 'fastify';
import type { BatchApiOptions } from './batch-api-options.ts';

/** The OpenAI Files API (being written). */
export function fileRoutes(_app: FastifyInstance, _options: BatchApiOptions): void {}
