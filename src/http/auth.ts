import type { FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { ManagedTokenRecord } from '../store/store.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** onRequest hook for routes that take a managed token; sets `request.managedToken`. */
    requireManagedToken: (request: FastifyRequest) => Promise<void>;
  }
  interface FastifyRequest {
    managedToken?: ManagedTokenRecord;
  }
}

const header = (request: FastifyRequest, name: string) => {
  const value = request.headers[name];
  return Array.isArray(value) ? value[0] : value;
};

/**
 * The managed-token check, as a hook the background routes run on request, before their
 * body is read: an unauthenticated upload costs nothing.
 */
export const authPlugin = fp(
  async (app) => {
    app.decorateRequest('managedToken', undefined);
    app.decorate('requireManagedToken', async (request: FastifyRequest) => {
      request.managedToken = await app.tokens.verifyManagedToken(header(request, 'authorization'), header(request, 'token'));
    });
  },
  { name: 'cutout-auth', dependencies: ['cutout-services'] },
);
