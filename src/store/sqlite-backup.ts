import { chmod, rm } from 'node:fs/promises';
import SQLite from 'better-sqlite3';
import { DEFAULT_MIGRATION_TABLE } from 'kysely';

/** What a copy of Cutout's SQLite database holds, as a backup's manifest and a restore report it. */
export interface SqliteDatabaseFacts {
  /** The migrations recorded in it, in order; the last is its schema. */
  migrations: string[];
  userTokens: number;
  revokedUserTokens: number;
  accounts: number;
  jobs: number;
  /** Jobs `done` or `cancelled`. */
  finishedJobs: number;
  /** Removals counted in `usage_daily`, every outcome, every day. */
  countedRemovals: number;
  /**
   * The data directory's files its jobs need, relative to it: every kept result, and the
   * uploaded image of every item still to run.
   */
  jobFiles: string[];
}

/**
 * Copies a SQLite database that other processes may be writing to `target` (a new file) with
 * SQLite's online backup API, in a single step: one read transaction sees one committed state
 * of the whole file, so the copy is consistent, and, WAL letting writers go on beside a reader,
 * no server waits for it. (Copied in small steps, as better-sqlite3 does by default, any write
 * by another process between two steps would restart the copy.) The copy is left in rollback
 * journal mode, one self-contained file, readable by its owner only.
 */
export async function copySqliteOnline(source: string, target: string): Promise<void> {
  const database = new SQLite(source, { readonly: true, fileMustExist: true });
  try {
    database.pragma('busy_timeout = 5000');
    await database.backup(target, { progress: () => 0x7fffffff });
  } finally {
    database.close();
  }
  const copy = new SQLite(target);
  try {
    copy.pragma('journal_mode = DELETE');
  } finally {
    copy.close();
  }
  // Password and token hashes: readable by their owner only, as the data directory's file.
  await chmod(target, 0o600);
}

/**
 * Writes the database `backupFile` over `target` through the same backup API, which takes
 * `target`'s locks and goes through its WAL like any writer, so that a process holding it open
 * sees either the old content or the new, never a mix. A missing `target` is created; WAL and
 * shared-memory files left without their database are removed first (SQLite would replay a
 * stranger's WAL into the new file).
 */
export async function restoreSqlite(backupFile: string, target: string, targetExists: boolean): Promise<void> {
  if (!targetExists) await Promise.all([rm(`${target}-wal`, { force: true }), rm(`${target}-shm`, { force: true })]);
  const backup = new SQLite(backupFile, { readonly: true, fileMustExist: true });
  try {
    await backup.backup(target, { progress: () => 0x7fffffff });
  } finally {
    backup.close();
  }
}

/** `PRAGMA integrity_check`'s answer: `ok`, or the problems it found, one a line. */
export function sqliteIntegrity(file: string): string {
  const database = new SQLite(file, { readonly: true, fileMustExist: true });
  try {
    return (database.pragma('integrity_check') as { integrity_check: string }[]).map((row) => row.integrity_check).join('\n');
  } finally {
    database.close();
  }
}

/**
 * Reads {@link SqliteDatabaseFacts} from a database file (a backup's copy, or a restored
 * database), read-only. A schema older than the jobs' tables counts none of them.
 */
export function describeSqliteDatabase(file: string): SqliteDatabaseFacts {
  const database = new SQLite(file, { readonly: true, fileMustExist: true });
  try {
    const tables = new Set((database.prepare("select name from sqlite_master where type = 'table'").all() as { name: string }[]).map((row) => row.name));
    const count = (table: string, where = '') => (tables.has(table) ? Number((database.prepare(`select count(*) as n from ${table} ${where}`).get() as { n: number }).n) : 0);
    const migrations = tables.has(DEFAULT_MIGRATION_TABLE)
      ? (database.prepare(`select name from ${DEFAULT_MIGRATION_TABLE} order by name`).all() as { name: string }[]).map((row) => row.name)
      : [];
    const counted = tables.has('usage_daily')
      ? Number((database.prepare('select coalesce(sum(succeeded + refused + failed), 0) as n from usage_daily').get() as { n: number }).n)
      : 0;
    const jobFiles = tables.has('job_items')
      ? (
          database
            .prepare(
              `select result_path as path from job_items where result_path is not null
               union select input_path from job_items where input_path is not null and state in ('queued', 'running')
               order by path`,
            )
            .all() as { path: string }[]
        ).map((row) => row.path)
      : [];
    return {
      migrations,
      userTokens: count('user_tokens'),
      revokedUserTokens: count('user_tokens', 'where revoked_at is not null'),
      accounts: count('accounts'),
      jobs: count('jobs'),
      finishedJobs: count('jobs', "where status in ('done', 'cancelled')"),
      countedRemovals: counted,
      jobFiles,
    };
  } finally {
    database.close();
  }
}
