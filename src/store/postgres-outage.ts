/** Socket errors of a connection that could not be made or was cut. */
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ECONNABORTED', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);

/**
 * SQLSTATEs that say the server, not the query, is the problem: class 08 (connection
 * exception), 57P01–57P03 (shut down by an administrator or a crash, or not accepting
 * connections yet while it starts or stops), 53300 (too many connections).
 */
const isServerState = (code: string) => code.startsWith('08') || code === '57P01' || code === '57P02' || code === '57P03' || code === '53300';

/**
 * What node-postgres says when a connection ends under a query, or when the pool could not
 * hand out a connection within `connectionTimeoutMillis`; these carry no code.
 */
const DRIVER_MESSAGES = [/^Connection terminated/, /^timeout exceeded when trying to connect/, /not queryable/];

/**
 * True when `error` means PostgreSQL cannot be reached right now (see
 * {@link StoreUnavailableError}), false for an error of the query itself.
 */
export function isPostgresUnreachable(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && (NETWORK_CODES.has(code) || (/^[0-9A-Z]{5}$/.test(code) && isServerState(code)))) return true;
  // Node tries every address of a host name (IPv4 and IPv6) and reports all their failures.
  if (error instanceof AggregateError && error.errors.some(isPostgresUnreachable)) return true;
  return DRIVER_MESSAGES.some((pattern) => pattern.test(error.message));
}
