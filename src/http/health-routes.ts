import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import Type from 'typebox';

const Status = Type.Object({ status: Type.String() });
const Ready = Type.Object({
  status: Type.String(),
  /** Which form of the model runs (`int8` or `fp32`) and why (CUTOUT_MODEL_PRECISION). */
  precision: Type.Optional(Type.String()),
  precisionReason: Type.Optional(Type.String()),
  /** Every loaded model (CUTOUT_MODELS), the default first, with its precision and input size. */
  models: Type.Optional(
    Type.Array(
      Type.Object({ name: Type.String(), precision: Type.Optional(Type.String()), precisionReason: Type.Optional(Type.String()), inputSize: Type.Integer() }),
    ),
  ),
});

/**
 * Liveness (`/healthz`: the process answers) and readiness (`/readyz`: the models are loaded,
 * which they are and which form of each runs, and the process is not draining after SIGTERM). Readiness does
 * not depend on PostgreSQL or Redis: every replica shares them, so their outage would take
 * every replica out of the balancer at once, and clients would get the balancer's 503
 * instead of Cutout's own (docs/deployment.md). Both are probes: their request lines are
 * logged at debug.
 */
export const healthRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const probe = { probe: true };
  app.get('/healthz', { config: probe, schema: { hide: true, response: { 200: Status } } }, async () => ({ status: 'ok' }));
  app.get('/readyz', { config: probe, schema: { hide: true, response: { 200: Ready, 503: Status } } }, async (_request, reply) => {
    if (app.drain.draining) return reply.code(503).send({ status: 'draining' });
    if (!app.model.ready) return reply.code(503).send({ status: 'loading' });
    const choice = app.model.precision;
    const models = app.model.loaded.map(({ name, segmenter, choice }) => ({ name, precision: choice?.precision, precisionReason: choice?.reason, inputSize: segmenter.size }));
    return { status: 'ready', precision: choice?.precision, precisionReason: choice?.reason, models };
  });
};
