import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import Type from 'typebox';

const Status = Type.Object({ status: Type.String(), reason: Type.Optional(Type.String()) });
/**
 * Where a model runs: which form (`int8`, `fp32`, `fp16`) and why (CUTOUT_MODEL_PRECISION), on
 * which provider (`cpu`, `webgpu`, …) and why (CUTOUT_EXECUTION_PROVIDER, or what `auto`
 * measured), and one pass's time at start, in ms.
 */
const Placement = {
  precision: Type.Optional(Type.String()),
  precisionReason: Type.Optional(Type.String()),
  provider: Type.Optional(Type.String()),
  providerReason: Type.Optional(Type.String()),
  passMs: Type.Optional(Type.Number()),
};
const Model = Type.Object({ name: Type.String(), ...Placement, inputSize: Type.Integer() });
const Ready = Type.Object({
  status: Type.String(),
  /** The default model's placement. */
  ...Placement,
  /** Every loaded model (CUTOUT_MODELS), the default first, with its placement and input size. */
  models: Type.Optional(Type.Array(Model)),
});

/**
 * Liveness (`/healthz`: the process answers) and readiness (`/readyz`: the models are loaded,
 * which they are, which form of each runs where, and the process is not draining after
 * SIGTERM; a model that can run no more, its GPU lost, makes it `failed` with the reason). Readiness does
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
    const failure = app.model.failure;
    if (failure) return reply.code(503).send({ status: 'failed', reason: failure.message });
    if (!app.model.ready) return reply.code(503).send({ status: 'loading' });
    const models = app.model.loaded.map(({ name, segmenter, choice, provider, providerReason, passMs }) => ({
      name,
      precision: choice?.precision,
      precisionReason: choice?.reason,
      provider,
      providerReason,
      passMs: passMs === undefined ? undefined : Math.round(passMs * 10) / 10,
      inputSize: segmenter.size,
    }));
    const { name: _name, inputSize: _size, ...first } = models[0];
    return { status: 'ready', ...first, models };
  });
};
