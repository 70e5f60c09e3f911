import swaggerUi from '@fastify/swagger-ui';
import type { FastifyPluginAsync } from 'fastify';

/**
 * Like the dashboard's (src/dashboard/dashboard-plugin.ts): everything comes from Cutout
 * itself. Swagger UI needs no inline script or style (its styles are set through the DOM),
 * and its icons are data: images; "Try it out" calls this same origin.
 */
const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join('; ');

/**
 * `GET /docs`: the interactive API reference, Swagger UI rendering this server's own
 * OpenAPI document (`/docs/json`, the same object as `/api/v1/openapi.json`). Every script,
 * stylesheet and image is served from here (@fastify/swagger-ui ships Swagger UI's files in
 * its package), so it works offline. Needs @fastify/swagger registered before it.
 *
 * @example await app.register(apiReferencePlugin)
 */
export const apiReferencePlugin: FastifyPluginAsync = async (app) => {
  await app.register(swaggerUi, {
    routePrefix: '/docs',
    staticCSP: CONTENT_SECURITY_POLICY,
    theme: { title: 'Cutout API reference' },
    // BaseLayout has no top bar: it only offers to load another document, and its logo is
    // an SVG with an inline <style> that the policy above refuses.
    uiConfig: { layout: 'BaseLayout', deepLinking: true, docExpansion: 'list', defaultModelsExpandDepth: 0, displayRequestDuration: true },
    uiHooks: {
      onRequest: (_request, reply, done) => {
        reply.headers({ 'x-content-type-options': 'nosniff', 'referrer-policy': 'same-origin', 'x-frame-options': 'DENY' });
        done();
      },
    },
  });
};
