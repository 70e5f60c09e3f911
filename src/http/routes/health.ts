import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import Type from 'typebox';

const Status = Type.Object({ status: Type.String() });
const Ready = Type.Object({
  status: Type.String(),
  /** Which form of the model runs (`int8` or `fp32`) and why (CUTOUT_MODEL_PRECISION). */
  precision: Type.Optional(Type.String()),
  precisionReason: Type.Optional(Type.String()),
});

/**
 * Liveness (`/healthz`: the process answers) and readiness (`/readyz`: the model is loaded,
 * and which form of it runs).
 */
export const healthRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get('/healthz', { schema: { hide: true, response: { 200: Status } } }, async () => ({ status: 'ok' }));
  app.get('/readyz', { schema: { hide: true, response: { 200: Ready, 503: Status } } }, async (_request, reply) => {
    if (!app.model.ready) return reply.code(503).send({ status: 'loading' });
    const choice = app.model.precision;
    return { status: 'ready', precision: choice?.precision, precisionReason: choice?.reason };
  });
};
