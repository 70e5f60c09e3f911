import { existsSync } from 'node:fs';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import { DEFAULT_MIGRATION_TABLE, Kysely, Migrator, SqliteDialect, sql } from 'kysely';
import pg from 'pg';
import type { Config } from '../config.js';
import { migrationProvider } from './migrations.js';
import { CurrentSchemaPostgresDialect } from './postgres-introspector.js';
import { readServesFrom } from './schema-compatibility.js';

/** One migration recorded in a database: its name and when it ran (ISO 8601). */
export interface AppliedMigration {
  name: string;
  at: string;
}

/** A database's migrations against the ones this Cutout knows (src/store/migrations.ts). */
export interface MigrationStatus {
  /** The SQLite file, or the PostgreSQL database as `host:port/name` (never the password). */
  database: string;
  /** Recorded in the database and known here, in order. */
  applied: AppliedMigration[];
  /** Known here, not yet recorded: the next start (or `cutout migrate`) runs them. */
  pending: string[];
  /** Recorded in the database but unknown here: a newer Cutout ran them. */
  unknown: AppliedMigration[];
  /**
   * With `unknown` ones and none pending: the oldest release the newer schema serves
   * (src/store/schema-compatibility.ts).
   */
  servesFrom?: string;
}

/** Every migration this Cutout knows, in the order they run. */
export async function knownMigrations(): Promise<string[]> {
  return Object.keys(await migrationProvider.getMigrations()).sort();
}

/**
 * The migrations of the database `db` is connected to, read without changing it (Kysely's
 * Migrator only for what it knows; its own table for what it does not).
 * `schema`: where the migration table lives (PostgreSQL).
 */
export async function migrationsOf(db: Kysely<unknown>, schema?: string): Promise<Omit<MigrationStatus, 'database'>> {
  const known = await new Migrator({ db, provider: migrationProvider, migrationTableSchema: schema }).getMigrations();
  const tables = await db.introspection.getTables({ withInternalKyselyTables: true });
  const recorded = tables.some((table) => table.name === DEFAULT_MIGRATION_TABLE && (!schema || table.schema === schema))
    ? (
        await sql<{ name: string; timestamp: string }>`select name, timestamp from ${sql.table(schema ? `${schema}.${DEFAULT_MIGRATION_TABLE}` : DEFAULT_MIGRATION_TABLE)} order by name`.execute(db)
      ).rows
    : [];
  const knownNames = new Set(known.map((migration) => migration.name));
  const atOf = (value: string | Date) => new Date(value).toISOString();
  const pending = known.filter((migration) => !migration.executedAt).map((migration) => migration.name);
  const unknown = recorded.filter((row) => !knownNames.has(row.name)).map((row) => ({ name: row.name, at: atOf(row.timestamp) }));
  return {
    applied: known.filter((migration) => migration.executedAt).map((migration) => ({ name: migration.name, at: migration.executedAt!.toISOString() })),
    pending,
    unknown,
    // Every known migration ran, 0008 (which made the table) among them.
    ...(unknown.length > 0 && pending.length === 0 ? { servesFrom: await readServesFrom(db, schema) } : {}),
  };
}

/** {@link migrationsOf} the database `db` is connected to, with what to call it in print. */
export async function migrationStatusOf(db: Kysely<unknown>, database: string, schema?: string): Promise<MigrationStatus> {
  return { database, ...(await migrationsOf(db, schema)) };
}

/** `host:port/database` of a PostgreSQL URL: what may be printed of it. */
export function describePostgresUrl(url: string): string {
  const parsed = new URL(url);
  return `${parsed.hostname}:${parsed.port || 5432}${parsed.pathname}`;
}

/**
 * The status of the database the configuration names (DATABASE_URL, else the data directory's
 * SQLite file), opened read-only where the engine allows and never migrated: unlike
 * `openStore`, this may look at a database a newer or older Cutout made.
 */
export async function readMigrationStatus(config: Pick<Config, 'databaseUrl' | 'dataDir'>): Promise<MigrationStatus> {
  if (config.databaseUrl) {
    const pool = new pg.Pool({ connectionString: config.databaseUrl, max: 1, connectionTimeoutMillis: 5000 });
    const db = new Kysely<unknown>({ dialect: new CurrentSchemaPostgresDialect({ pool }) });
    try {
      const schema = (await sql<{ schema: string }>`select current_schema() as schema`.execute(db)).rows[0]?.schema;
      return await migrationStatusOf(db, describePostgresUrl(config.databaseUrl), schema);
    } finally {
      await db.destroy();
    }
  }
  const file = join(config.dataDir, 'cutout.sqlite');
  if (!existsSync(file)) return { database: file, applied: [], pending: await knownMigrations(), unknown: [] };
  const db = new Kysely<unknown>({ dialect: new SqliteDialect({ database: new SQLite(file, { readonly: true, fileMustExist: true }) }) });
  try {
    return await migrationStatusOf(db, file);
  } finally {
    await db.destroy();
  }
}
