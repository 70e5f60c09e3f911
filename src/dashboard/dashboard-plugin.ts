import cookie from '@fastify/cookie';
import formbody from '@fastify/formbody';
import type { FastifyPluginAsync } from 'fastify';
import { AccountService } from './account-service.js';
import { MemoryAttemptThrottle, type AttemptThrottle, type AttemptThrottleOptions } from './attempt-throttle.js';
import type { DashboardServices } from './dashboard-services.js';
import { prepareFirstAccount } from './first-account.js';
import { RedisAttemptThrottle } from './redis-attempt-throttle.js';
import { accountRoutes } from './routes/account-routes.js';
import { assetRoutes } from './routes/assets.js';
import { batchRoutes } from './routes/batch-routes.js';
import { tokenRoutes } from './routes/token-routes.js';
import { tryItRoutes } from './routes/try-it-routes.js';
import { usageRoutes } from './routes/usage-routes.js';
import { sessionPlugin } from './session.js';

const FIFTEEN_MINUTES = 15 * 60_000;

/** Everything a dashboard page may load comes from Cutout itself; images also from blob: (try-it). */
const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' blob: data:",
  "connect-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join('; ');

/**
 * The token dashboard, registered with the prefix `/dashboard`: setup and sign-in, the
 * Tokens section, usage, try-it and batch jobs. Server-rendered HTML and one small script, all served
 * from here. Its cookies, form parsing and session hook stay inside this scope: the API
 * never sees a session.
 *
 * @example await app.register(dashboardPlugin, { prefix: '/dashboard' })
 */
export const dashboardPlugin: FastifyPluginAsync = async (app) => {
  const accounts = new AccountService(app.store, { sessionTtl: app.config.sessionTtl });
  // Shared by every replica through Redis when there is one; see RedisAttemptThrottle for
  // what happens while it is away.
  const throttle = (name: string, options: AttemptThrottleOptions): AttemptThrottle =>
    app.redis ? new RedisAttemptThrottle(app.redis, { ...options, name, onRedisError: (error) => app.log.debug({ err: error }, 'sign-in throttle: Redis did not answer; counted in this process') }) : new MemoryAttemptThrottle(options);
  const services: DashboardServices = {
    accounts,
    setupCode: await prepareFirstAccount(app.config, accounts, app.store, app.log),
    accountThrottle: throttle('account', { maxFailures: 5, windowMs: FIFTEEN_MINUTES }),
    addressThrottle: throttle('address', { maxFailures: 20, windowMs: FIFTEEN_MINUTES }),
  };
  app.decorate('dashboard', services);
  // Pages, not API: keep every dashboard route out of the OpenAPI description.
  app.addHook('onRoute', (route) => {
    route.schema = { ...route.schema, hide: true };
  });

  await app.register(cookie);
  await app.register(formbody, { bodyLimit: 64 * 1024 });
  await app.register(sessionPlugin);

  app.addHook('onRequest', async (_request, reply) => {
    reply.headers({
      'content-security-policy': CONTENT_SECURITY_POLICY,
      'x-content-type-options': 'nosniff',
      'referrer-policy': 'same-origin',
      'x-frame-options': 'DENY',
    });
  });

  app.get('/', async (request, reply) => {
    if (request.dashboardSession) return reply.redirect('/dashboard/tokens', 303);
    return reply.redirect((await accounts.hasAccounts()) ? '/dashboard/sign-in' : '/dashboard/setup', 303);
  });
  await app.register(assetRoutes);
  await app.register(accountRoutes);
  await app.register(tokenRoutes);
  await app.register(usageRoutes);
  await app.register(tryItRoutes);
  await app.register(batchRoutes);
};
