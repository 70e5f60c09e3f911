import rateLimit from '@fastify/rate-limit';
import fp from 'fastify-plugin';
import { CutoutError } from '../errors.js';

/**
 * Per-token rate limit on the routes of the scope it is registered in: each user token (all
 * its managed tokens together) gets `config.rateLimit` removals a minute, counted in memory
 * or, with REDIS_URL, in Redis (the app's one connection, `app.redis`) so that several
 * processes share the count. Answers 429 `rate_limited` with `Retry-After` and the
 * `RateLimit-*` headers of the IETF draft. Its hook runs after the auth hook, so every request
 * it counts has a managed token.
 *
 * It fails open: while Redis cannot be reached, requests are let through uncounted, at once
 * (the connection does not queue commands), and the outage is logged once. The limit shares
 * capacity fairly between tokens; it is not what protects a replica, which its own queue
 * bound (503 queue_full) does whether Redis answers or not, and refusing every paying
 * request because a counter is away would turn a Redis restart into an outage of the API
 * (docs/deployment.md; test/redis-outage.test.ts).
 *
 * @example await app.register(rateLimitPlugin) // inside the background routes, after their auth hook
 */
export const rateLimitPlugin = fp(
  async (app) => {
    const { rateLimit: max } = app.config;
    if (max === 0) return;

    await app.register(rateLimit, {
      global: true,
      max,
      timeWindow: 60_000,
      redis: app.redis,
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
  { name: 'cutout-rate-limit', dependencies: ['cutout-services', 'cutout-auth', 'cutout-redis'] },
);
