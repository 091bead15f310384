import type { FastifyInstance } from 'fastify';
import fastifyPlugin from 'fastify-plugin';
import { BacklogAdmission, type BacklogAdmissionOptions } from './backlog-admission.ts';

declare module 'fastify' {
  interface FastifyInstance {
    /** The model queues' backlog and drain rate, sampled in the background, for admission. */
    queueBacklog: BacklogAdmission;
  }
}

/** The backlog sampler as a decorator that owns it: sampling once the app is ready, stopped when it closes. */
export const queueBacklog = fastifyPlugin(async (app: FastifyInstance, options: BacklogAdmissionOptions) => {
  const backlog = new BacklogAdmission(options);
  app.decorate('queueBacklog', backlog);
  app.addHook('onReady', async () => backlog.start());
  app.addHook('onClose', async () => backlog.stop());
}, { name: 'queue-backlog' });
