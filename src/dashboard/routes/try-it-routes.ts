import type { FastifyPluginAsync } from 'fastify';
import { CutoutError } from '../../errors.js';
import { answerRemoval, type AnswerWire } from '../../http/removal-reply.js';
import { readOptions } from '../../options/read-options.js';
import { requireCsrfHeader, requireSessionForApi, requireSignedIn, sendPage } from '../guards.js';
import { csrfToken } from '../session.js';
import { tryItPage } from '../views/try-it-page.js';

/** Try-it's answer: the image itself, never stored by the browser. */
const TRY_IT_ANSWER: AnswerWire = { negotiation: 'image', headers: { 'cache-control': 'no-store' } };

/**
 * The try-it page and its endpoint. The endpoint takes the image as the raw request body and
 * the API's output options in its query string, and answers the image itself; it takes a dashboard session (and its CSRF token), never a
 * token, and runs the API's own pipeline through the API's inference queue. Its errors are
 * the API's problem+json, whose `detail` the page shows.
 */
export const tryItRoutes: FastifyPluginAsync = async (app) => {
  const { config } = app;

  app.get('/try-it', { preHandler: requireSignedIn }, async (request, reply) =>
    sendPage(reply, tryItPage(request.dashboardSession!, csrfToken(request, reply), config.maxImageBytes, config.quality, app.model.names)),
  );

  await app.register(async (api) => {
    api.addContentTypeParser('application/octet-stream', { parseAs: 'buffer', bodyLimit: config.maxImageBytes }, (_request, body, done) => done(null, body));
    api.post(
      '/try-it/remove',
      {
        onRequest: async (request) => {
          await requireSessionForApi(request);
          app.removals.assertCapacity();
        },
        preHandler: requireCsrfHeader,
      },
      async (request, reply) => {
        const bytes = request.body;
        if (!Buffer.isBuffer(bytes) || bytes.length === 0) throw new CutoutError('invalid_request', 'Send the image as the request body (application/octet-stream).');
        const options = readOptions(request.query as Record<string, unknown>, 'native');
        return answerRemoval(app, request, reply, { photo: bytes, signal: app.removals.signalFor(reply), removal: { options } }, TRY_IT_ANSWER);
      },
    );
  });
};
