/** @fastify/rate-limit's in-memory store, which its package ships without a declaration. */
declare module '@fastify/rate-limit/store/LocalStore.js' {
  import type { FastifyRateLimitStore } from '@fastify/rate-limit';

  const LocalStore: new (continueExceeding: boolean, exponentialBackoff: boolean, cache?: number) => FastifyRateLimitStore;
  export default LocalStore;
}
