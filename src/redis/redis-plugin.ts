import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import fp from 'fastify-plugin';
import type { Redis } from 'ioredis';
import { openRedis } from '../redis/open-redis.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** The connection to REDIS_URL, shared by the rate limit and the sign-in throttle; undefined without REDIS_URL. */
    redis: Redis | undefined;
  }
}

/** How long the start waits for Redis to be connected. */
const CONNECT_WAIT_MS = 2000;

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
    if (!redis) return;
    app.addHook('onClose', async () => void (await redis.quit().catch(() => redis.disconnect())));
    // The connection queues nothing: give it a moment to be ready before the first requests,
    // but do not hold the start for a Redis that is away (the app works without it).
    const ready = new AbortController();
    await Promise.race([once(redis, 'ready', { signal: ready.signal }).catch(() => {}), sleep(CONNECT_WAIT_MS, undefined, { ref: false })]);
    ready.abort();
  },
  { name: 'cutout-redis', dependencies: ['cutout-services'] },
);
