import { Kysely, sql } from 'kysely';
import pg from 'pg';
import type { Database } from './database.js';
import { createKyselyStore, migrate } from './kysely-store.js';
import { CurrentSchemaPostgresDialect } from './postgres-introspector.js';
import type { Store } from './store.js';

export interface PostgresStoreOptions {
  /** Keep Cutout's tables in this schema (created if missing); tests use a fresh one per run. */
  schema?: string;
}

/** PostgreSQL through `pg`, used when DATABASE_URL is set. */
export async function openPostgresStore(url: string, options: PostgresStoreOptions = {}): Promise<Store> {
  const { schema } = options;
  if (schema !== undefined && !/^[a-z_][a-z0-9_]*$/.test(schema)) throw new Error(`invalid schema name ${schema}`);
  const pool = new pg.Pool({ connectionString: url, max: 10, ...(schema ? { options: `-c search_path=${schema}` } : {}) });
  const db = new Kysely<Database>({ dialect: new CurrentSchemaPostgresDialect({ pool }) });
  try {
    if (schema) await sql`create schema if not exists ${sql.id(schema)}`.execute(db);
    const current = schema ?? (await sql<{ schema: string }>`select current_schema() as schema`.execute(db)).rows[0]?.schema;
    await migrate(db, current);
  } catch (error) {
    await db.destroy();
    throw error;
  }
  return createKyselyStore(db);
}
