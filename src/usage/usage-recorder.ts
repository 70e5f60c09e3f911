import fp from 'fastify-plugin';
import type { RemovalOutcome } from '../store/store.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by a background route once its image has been decoded: width × height / 10⁶. */
    inputMegapixels?: number;
  }
}

const outcomeOf = (status: number): RemovalOutcome => (status < 400 ? 'succeeded' : status < 500 ? 'refused' : 'failed');

/**
 * Counts every request of its scope that carried a valid managed token in the usage the
 * dashboard shows (token, UTC day, outcome, input megapixels): one upsert, after the answer
 * has been sent, so it costs the client nothing. A failed write is logged, never turned into
 * an error. Registered in the background routes' scope; the dashboard's try-it is not counted.
 *
 * @example await app.register(usageRecorderPlugin) // inside the background routes
 */
export const usageRecorderPlugin = fp(
  async (app) => {
    app.decorateRequest('inputMegapixels', undefined);
    app.addHook('onResponse', async (request, reply) => {
      const token = request.managedToken;
      if (!token) return;
      const day = new Date().toISOString().slice(0, 10);
      try {
        await app.store.recordRemoval(token.userTokenId, day, outcomeOf(reply.statusCode), request.inputMegapixels ?? 0);
      } catch (error) {
        request.log.warn({ err: error }, 'usage could not be recorded');
      }
    });
  },
  { name: 'cutout-usage-recorder', dependencies: ['cutout-services', 'cutout-auth'] },
);
