import { Kysely, sql } from 'kysely';
import pg from 'pg';
import type { Database } from './database.js';
import { createKyselyStore, migrate } from './kysely-store.js';
import { CurrentSchemaPostgresDialect } from './postgres-introspector.js';
import { isPostgresUnreachable } from './postgres-outage.js';
import type { SchemaWatch } from './schema-compatibility.js';
import type { Store } from './store.js';
import { reportUnavailability } from './store-unavailable.js';

/**
 * How long a query may wait for a connection, new or from the pool: past it the request is
 * answered 503 `store_unavailable` instead of hanging while PostgreSQL cannot be reached.
 */
const CONNECT_TIMEOUT_MS = 5000;

export interface PostgresStoreOptions extends SchemaWatch {
  /** Keep Cutout's tables in this schema (created if missing); tests use a fresh one per run. */
  schema?: string;
}

/**
 * `create schema if not exists` still fails with a unique violation (23505) when another
 * connection creates the same schema at the same moment: then the schema is there, as wanted.
 */
async function createSchemaIfMissing(db: Kysely<Database>, schema: string): Promise<void> {
  try {
    await sql`create schema if not exists ${sql.id(schema)}`.execute(db);
  } catch (error) {
    if ((error as { code?: string }).code !== '23505') throw error;
  }
}

/**
 * PostgreSQL through `pg`, used when DATABASE_URL is set. While PostgreSQL cannot be reached
 * every call rejects with StoreUnavailableError, and the pool connects again by itself once
 * it is back.
 */
export async function openPostgresStore(url: string, options: PostgresStoreOptions = {}): Promise<Store> {
  const { schema } = options;
  if (schema !== undefined && !/^[a-z_][a-z0-9_]*$/.test(schema)) throw new Error(`invalid schema name ${schema}`);
  const pool = new pg.Pool({
    connectionString: url,
    max: 10,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    keepAlive: true,
    ...(schema ? { options: `-c search_path=${schema}` } : {}),
  });
  // A connection that PostgreSQL closes (a restart, an administrator, a cut network) emits
  // 'error' on its client, and, when idle, on the pool; an 'error' with no listener ends the
  // process. The query it was running rejects by itself (and becomes a 503); the pool drops
  // the client, and the next query opens a new connection or reports the outage.
  pool.on('error', () => {});
  pool.on('connect', (client) => client.on('error', () => {}));
  const db = new Kysely<Database>({ dialect: new CurrentSchemaPostgresDialect({ pool }) });
  try {
    if (schema) await createSchemaIfMissing(db, schema);
    const current = schema ?? (await sql<{ schema: string }>`select current_schema() as schema`.execute(db)).rows[0]?.schema;
    const newer = await migrate(db, current);
    if (newer) options.onNewerSchema?.(newer);
  } catch (error) {
    await db.destroy();
    throw error;
  }
  return reportUnavailability(createKyselyStore(db), isPostgresUnreachable);
}
