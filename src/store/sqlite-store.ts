import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, SqliteAdapter, SqliteDialect } from 'kysely';
import type { Database } from './database.js';
import { createKyselyStore, migrate } from './kysely-store.js';
import type { Store } from './store.js';

/**
 * SQLite runs schema changes inside transactions, but Kysely's adapter says it does not, so
 * each statement of a migration would commit alone: a process killed between creating a
 * table and recording its migration left a database no later start could migrate. This
 * dialect lets every migration commit or roll back whole.
 */
class TransactionalDdlSqliteDialect extends SqliteDialect {
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
  database.pragma('journal_mode = WAL');
  database.pragma('synchronous = FULL');
  database.pragma('foreign_keys = ON');
  database.pragma('busy_timeout = 5000');
  const db = new Kysely<Database>({ dialect: new TransactionalDdlSqliteDialect({ database }) });
  await migrate(db);
  return createKyselyStore(db);
}
