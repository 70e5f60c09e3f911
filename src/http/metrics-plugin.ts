import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { CutoutError } from '../errors.js';
import { CutoutMetrics, type RemovalTimings } from '../metrics/cutout-metrics.js';
import './probe-log-controller.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** The app's Prometheus metrics; undefined with CUTOUT_METRICS=false. */
    metrics: CutoutMetrics | undefined;
  }
  interface FastifyRequest {
    /** Set by a route that ran a removal: its queue wait and model step, for the histograms. */
    removalTimings?: RemovalTimings;
  }
}

const digest = (text: string) => createHash('sha256').update(text).digest();

/** `ok` for an answer that is not an error, else its registered code, else `http_<status>` (a dashboard page). */
const outcomeOf = (reply: FastifyReply) => reply.problemCode ?? (reply.statusCode < 400 ? 'ok' : `http_${reply.statusCode}`);

/**
 * `GET /metrics` in Prometheus' text format (see {@link CutoutMetrics}), and the hook that
 * counts every answered request by route template and outcome. With CUTOUT_METRICS=false
 * there is neither, and `/metrics` is 404 like any unknown path. With CUTOUT_METRICS_TOKEN,
 * a scrape must send it as `Authorization: Bearer <token>`; without, anyone who reaches the
 * port may read the counts (docs/deployment.md says where to keep it unreachable instead).
 */
export const metricsPlugin = fp(
  async (app) => {
    app.decorateRequest('removalTimings', undefined);
    if (!app.config.metrics) {
      app.decorate('metrics', undefined);
      return;
    }
    const metrics = new CutoutMetrics(app.queue, () => app.removals.memory, () => app.model.loaded);
    app.decorate('metrics', metrics);

    app.addHook('onResponse', async (request, reply) => {
      metrics.countRequest(request.method, request.routeOptions.url ?? 'unmatched', outcomeOf(reply));
      if (request.removalTimings && reply.statusCode === 200) metrics.observeRemoval(request.removalTimings, reply.elapsedTime / 1000);
    });

    const expected = app.config.metricsToken === undefined ? undefined : digest(`Bearer ${app.config.metricsToken}`);
    const requireToken = async (request: FastifyRequest) => {
      if (!expected) return;
      const sent = request.headers.authorization;
      if (!sent) throw new CutoutError('missing_token', 'GET /metrics needs the token of CUTOUT_METRICS_TOKEN as `Authorization: Bearer <token>`.');
      if (!timingSafeEqual(digest(sent), expected)) throw new CutoutError('invalid_token', 'That is not the token of CUTOUT_METRICS_TOKEN.');
    };

    app.get('/metrics', { config: { probe: true }, schema: { hide: true }, onRequest: requireToken }, async (_request, reply) =>
      reply.type(metrics.contentType).send(await metrics.text()),
    );
  },
  { name: 'cutout-metrics', dependencies: ['cutout-services', 'cutout-error-handler'] },
);
