import { randomUUID } from 'node:crypto';
import swagger from '@fastify/swagger';
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { CUTOUT_VERSION } from './cutout-version.js';
import { authTokenRoutes } from './api/auth-token-routes.js';
import { backgroundRoutes } from './api/background-routes.js';
import { compatRoutes } from './compat/compat-routes.js';
import { dashboardPlugin } from './dashboard/dashboard-plugin.js';
import { apiReferencePlugin } from './http/api-reference.js';
import { authPlugin } from './http/auth.js';
import { answerClientError } from './http/client-error.js';
import { errorHandlerPlugin } from './http/error-handler.js';
import { metricsPlugin } from './http/metrics-plugin.js';
import { openApiOptions } from './http/openapi-document.js';
import { ProbeLogController } from './http/probe-log-controller.js';
import { healthRoutes } from './http/health-routes.js';
import { jobsPlugin } from './jobs/jobs-plugin.js';
import { servicesPlugin, type Services } from './http/services.js';
import { unusedConnectionsPlugin } from './lifecycle/unused-connections.js';
import { redisPlugin } from './redis/redis-plugin.js';

const REQUEST_ID = /^[A-Za-z0-9._-]{1,128}$/;

/**
 * Builds the Fastify app around already opened services; does not listen. Tests use it
 * with `app.inject()`, `main.ts` with `app.listen()`.
 */
export async function buildApp(services: Services, logger: FastifyServerOptions['logger'] = false): Promise<FastifyInstance> {
  const { config } = services;
  const app = Fastify({
    logger,
    // Health checks and scrapes come every second from every balancer: their lines at debug.
    logController: new ProbeLogController(),
    // Base64 makes an image 4/3 larger; the JSON around it is small.
    bodyLimit: Math.ceil((config.maxImageBytes * 4) / 3) + 64 * 1024,
    genReqId: (request) => {
      const given = request.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    },
    ajv: { customOptions: { coerceTypes: false, allErrors: false } },
    return503OnClosing: true,
    // Requests Node's HTTP parser refuses (headers too large, not HTTP) get the problem shape too.
    clientErrorHandler: answerClientError,
    // Behind a reverse proxy: client addresses and https from X-Forwarded-* (dashboard cookies, throttling).
    trustProxy: config.trustProxy,
  }).withTypeProvider<TypeBoxTypeProvider>();

  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });

  app.removeContentTypeParser('text/plain');
  // An empty JSON body is an empty request (the token flow needs none), not malformed JSON.
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    if ((body as string).trim() === '') done(null, undefined);
    else parseJson(request, body as string, done);
  });

  await app.register(servicesPlugin, services);
  await app.register(unusedConnectionsPlugin);
  await app.register(redisPlugin);
  await app.register(errorHandlerPlugin);
  await app.register(metricsPlugin);
  await app.register(authPlugin);
  await app.register(swagger, openApiOptions(CUTOUT_VERSION));
  await app.register(healthRoutes);
  await app.register(authTokenRoutes);
  await app.register(backgroundRoutes);
  await app.register(jobsPlugin);
  await app.register(compatRoutes);
  await app.register(dashboardPlugin, { prefix: '/dashboard' });
  app.get('/api/v1/openapi.json', { schema: { hide: true } }, async () => app.swagger());
  await app.register(apiReferencePlugin);
  return app;
}
