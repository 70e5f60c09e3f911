import rateLimit from '@fastify/rate-limit';
import fp from 'fastify-plugin';
import { Redis } from 'ioredis';
import { CutoutError } from '../errors.js';

/**
 * Per-token rate limit on the routes of the scope it is registered in: each user token (all
 * its managed tokens together) gets `config.rateLimit` removals a minute, counted in memory
 * or, with REDIS_URL, in Redis so that several processes share the count. Answers 429
 * `rate_limited` with `Retry-After` and the `RateLimit-*` headers of the IETF draft. If Redis
 * is unreachable, requests are let through (and logged) rather than refused. Its hook runs
 * after the auth hook, so every request it counts has a managed token.
 *
 * @example await app.register(rateLimitPlugin) // inside the background routes, after their auth hook
 */
export const rateLimitPlugin = fp(
  async (app) => {
    const { rateLimit: max, redisUrl } = app.config;
    if (max === 0) return;
    const redis = redisUrl ? new Redis(redisUrl, { connectTimeout: 1000, maxRetriesPerRequest: 1, lazyConnect: false }) : undefined;
    redis?.on('error', (error) => app.log.warn({ err: error }, 'rate limit store (Redis) unavailable'));
    if (redis) app.addHook('onClose', async () => void (await redis.quit().catch(() => redis.disconnect())));

    await app.register(rateLimit, {
      global: true,
      max,
      timeWindow: 60_000,
      redis,
      nameSpace: 'cutout-rate-',
      skipOnError: true,
      enableDraftSpec: true,
      keyGenerator: (request) => request.managedToken?.userTokenId ?? request.ip,
      errorResponseBuilder: (_request, context) =>
        new CutoutError('rate_limited', `This token may make ${context.max} removals a minute; retry in ${context.after}.`, {
          headers: { 'retry-after': String(Math.ceil(context.ttl / 1000)) },
        }),
    });
  },
  { name: 'cutout-rate-limit', dependencies: ['cutout-services', 'cutout-auth'] },
);
