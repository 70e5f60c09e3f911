import rateLimit, { type FastifyRateLimitStore, type FastifyRateLimitStoreCtor } from '@fastify/rate-limit';
import LocalStore from '@fastify/rate-limit/store/LocalStore.js';
import fp from 'fastify-plugin';
import { CutoutError } from '../errors.js';

/** The app's one in-memory count, keyed by its configuration object, which every scope shares. */
const localStores = new WeakMap<object, FastifyRateLimitStore>();

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
 * Every scope that registers it (the native background routes, the remove.bg-compatible ones)
 * shares one count per token: in Redis through the same keys, and without Redis through one
 * in-memory store per app.
 *
 * @example await app.register(rateLimitPlugin) // inside the background routes, after their auth hook
 */
export const rateLimitPlugin = fp(
  async (app) => {
    const { rateLimit: max } = app.config;
    if (max === 0) return;
    // Without Redis the plugin would give each scope a count of its own: its constructor of
    // a store is handed one that returns the app's one.
    let store: FastifyRateLimitStoreCtor | undefined;
    if (!app.redis) {
      let shared = localStores.get(app.config);
      if (!shared) localStores.set(app.config, (shared = new LocalStore(false, false, 5000)));
      const sharedStore = shared;
      store = function () {
        return sharedStore;
      } as unknown as FastifyRateLimitStoreCtor;
    }

    await app.register(rateLimit, {
      global: true,
      max,
      timeWindow: 60_000,
      redis: app.redis,
      ...(store ? { store } : {}),
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
