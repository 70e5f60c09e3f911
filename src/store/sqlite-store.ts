import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import { CompiledQuery, Kysely, SqliteAdapter, SqliteDialect, SqliteDriver, type DatabaseConnection, type SqliteDialectConfig } from 'kysely';
import type { Database } from './database.js';
import { createKyselyStore, migrate } from './kysely-store.js';
import type { SchemaWatch } from './schema-compatibility.js';
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
 * Switches the file to WAL. On a fresh file another process starting at the same moment may
 * be switching it too, and SQLite answers that race with SQLITE_BUSY at once, without
 * waiting in the busy handler (seen in test/startup-race.test.ts under load): so a refused
 * switch is tried again, a few milliseconds later, for up to the busy timeout.
 */
async function switchToWal(database: SQLite.Database): Promise<void> {
  const deadline = Date.now() + 5000;
  for (;;) {
    try {
      database.pragma('journal_mode = WAL');
      return;
    } catch (error) {
      if ((error as { code?: unknown }).code !== 'SQLITE_BUSY' || Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 10 + Math.random() * 40));
    }
  }
}

/**
 * The embedded default: `<dataDir>/cutout.sqlite` in WAL mode with full fsync, so a token
 * committed before a crash (even `kill -9`) is there after it.
 */
export async function openSqliteStore(dataDir: string, watch: SchemaWatch = {}): Promise<Store> {
  await mkdir(dataDir, { recursive: true });
  const database = new SQLite(join(dataDir, 'cutout.sqlite'));
  database.pragma('busy_timeout = 5000');
  await switchToWal(database);
  database.pragma('synchronous = FULL');
  database.pragma('foreign_keys = ON');
  const db = new Kysely<Database>({ dialect: new TransactionalDdlSqliteDialect({ database }) });
  const newer = await migrate(db);
  if (newer) watch.onNewerSchema?.(newer);
  // Another process (the CLI, a second server on this data directory) held the write lock
  // for longer than busy_timeout: say so as an outage, not as an internal error.
  return reportUnavailability(createKyselyStore(db), (error) => (error as { code?: unknown } | null)?.code === 'SQLITE_BUSY');
}
