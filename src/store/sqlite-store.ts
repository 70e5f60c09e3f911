import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import { CompiledQuery, Kysely, SqliteAdapter, SqliteDialect, SqliteDriver, type DatabaseConnection, type SqliteDialectConfig } from 'kysely';
import type { Database } from './database.js';
import { createKyselyStore, migrate } from './kysely-store.js';
import type { Store } from './store.js';
import { reportUnavailability } from './store-unavailable.js';

/**
 * Begins every transaction with `BEGIN IMMEDIATE`, which takes the write lock at once and
 * waits for it (busy_timeout). Kysely's plain `BEGIN` takes it at the first write instead:
 * when two processes start on one fresh database (a server and the CLI, or two replicas on
 * one data directory), each reads the migration table, then one of them fails to upgrade to
 * a writer with SQLITE_BUSY, which no timeout waits out, and its start fails.
 */
class ImmediateTransactionSqliteDriver extends SqliteDriver {
  override async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('begin immediate'));
  }
}

/**
 * SQLite runs schema changes inside transactions, but Kysely's adapter says it does not, so
 * each statement of a migration would commit alone: a process killed between creating a
 * table and recording its migration left a database no later start could migrate. This
 * dialect lets every migration commit or roll back whole, and takes the write lock at the
 * start of every transaction ({@link ImmediateTransactionSqliteDriver}).
 */
class TransactionalDdlSqliteDialect extends SqliteDialect {
  readonly #config: SqliteDialectConfig;

  constructor(config: SqliteDialectConfig) {
    super(config);
    this.#config = config;
  }

  override createDriver() {
    return new ImmediateTransactionSqliteDriver(this.#config);
  }

  override createAdapter() {
    return new (class extends SqliteAdapter {
      override get supportsTransactionalDdl() {
        return true;
      }
    })();
  }
}

/**
 * The embedded default: `<dataDir>/cutout.sqlite` in WAL mode with full fsync, so a token
 * committed before a crash (even `kill -9`) is there after it.
 */
export async function openSqliteStore(dataDir: string): Promise<Store> {
  await mkdir(dataDir, { recursive: true });
  const database = new SQLite(join(dataDir, 'cutout.sqlite'));
  // First: switching a fresh file to WAL needs a lock that another process starting at the
  // same moment may hold for a few milliseconds.
  database.pragma('busy_timeout = 5000');
  database.pragma('journal_mode = WAL');
  database.pragma('synchronous = FULL');
  database.pragma('foreign_keys = ON');
  const db = new Kysely<Database>({ dialect: new TransactionalDdlSqliteDialect({ database }) });
  await migrate(db);
  // Another process (the CLI, a second server on this data directory) held the write lock
  // for longer than busy_timeout: say so as an outage, not as an internal error.
  return reportUnavailability(createKyselyStore(db), (error) => (error as { code?: unknown } | null)?.code === 'SQLITE_BUSY');
}
