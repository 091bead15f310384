import type { FastifyInstance } from 'fastify';
import fastifyPlugin from 'fastify-plugin';
import type { Redis } from '@gateway/queue';
import { InvalidationFeed } from '@gateway/store';

declare module 'fastify' {
  interface FastifyInstance {
    /** The store's change announcements, for the caches of keys and channels. */
    changeFeed: InvalidationFeed;
  }
}

/**
 * The gateway's one subscriber to the store's change feed, as a decorator that owns it:
 * subscribed when the app is ready, closed when the app closes.
 */
export const changeFeed = fastifyPlugin(async (app: FastifyInstance, options: { redis: Redis }) => {
  const feed = InvalidationFeed.beside(options.redis, 'gateway-invalidations');
  app.decorate('changeFeed', feed);
  app.addHook('onReady', () => feed.start());
  app.addHook('onClose', async () => feed.close());
}, { name: 'change-feed' });
