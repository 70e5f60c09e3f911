import fp from 'fastify-plugin';
import type { Redis } from 'ioredis';
import { openRedis } from '../redis/open-redis.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** The connection to REDIS_URL, shared by the rate limit and the sign-in throttle; undefined without REDIS_URL. */
    redis: Redis | undefined;
  }
}

/**
 * Opens the one Redis connection of the app when REDIS_URL is set, decorates it as
 * `app.redis`, and closes it with the app. The plugins that count across replicas declare
 * it as a dependency (`dependencies: ['cutout-redis']`).
 */
export const redisPlugin = fp(
  async (app) => {
    const { redisUrl } = app.config;
    const redis = redisUrl ? openRedis(redisUrl, app.log) : undefined;
    app.decorate('redis', redis);
    if (redis) app.addHook('onClose', async () => void (await redis.quit().catch(() => redis.disconnect())));
  },
  { name: 'cutout-redis', dependencies: ['cutout-services'] },
);
