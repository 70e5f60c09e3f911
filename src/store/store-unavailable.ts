import type { Store } from './store.js';

/**
 * The database behind a store cannot be reached right now (PostgreSQL restarting or gone,
 * the connection pool unable to connect, SQLite's write lock held too long by another
 * process): nothing was wrong with the request, and the same call may succeed in a few
 * seconds. The HTTP layer answers it with 503 `store_unavailable` and Retry-After; the
 * driver's own error is the `cause`.
 */
export class StoreUnavailableError extends Error {
  constructor(options: { cause: unknown }) {
    super('the database cannot be reached right now', options);
    this.name = 'StoreUnavailableError';
  }
}

/**
 * Wraps every method of `store` so that a rejection `isUnavailable` recognises becomes a
 * {@link StoreUnavailableError}; any other error passes unchanged.
 *
 * @example return reportUnavailability(createKyselyStore(db), isPostgresUnreachable)
 */
export function reportUnavailability(store: Store, isUnavailable: (error: unknown) => boolean): Store {
  const wrapped = {} as Record<string, unknown>;
  for (const [name, method] of Object.entries(store) as [string, (...args: unknown[]) => Promise<unknown>][]) {
    wrapped[name] = async (...args: unknown[]) => {
      try {
        return await method.apply(store, args);
      } catch (error) {
        throw isUnavailable(error) ? new StoreUnavailableError({ cause: error }) : error;
      }
    };
  }
  return wrapped as unknown as Store;
}
