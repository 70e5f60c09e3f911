import { existsSync } from 'node:fs';
import { copyFile, mkdir, readdir, rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { WEBHOOK_KEY_FILE } from '../auth/webhook-key.js';
import type { Config } from '../config.js';
import { CUTOUT_VERSION } from '../cutout-version.js';
import { readMigrationStatus } from '../store/migration-status.js';
import { copySqliteOnline, describeSqliteDatabase, sqliteIntegrity } from '../store/sqlite-backup.js';
import { BACKUP_FORMAT, DATABASE_FILE, describeContents, POSTGRES_DUMP_FILE, writeManifest, type BackupManifest } from './backup-manifest.js';
import { copyJobFile, listJobFiles } from './backup-files.js';
import { UsageError } from './usage-error.js';

export const BACKUP_USAGE = `  cutout backup DIR [--with-results]      a consistent copy of the SQLite database while servers run, webhook.key, and
                                          with --with-results the jobs' files; with DATABASE_URL, everything but the
                                          database (dump that with pg_dump first: docs/operations.md)
  cutout restore DIR [--force]            puts a backup back into the data directory; --force to replace a database
                                          that is there (stop every server on it first)`;

/** The key, where it is: copied into the backup when it is the data directory's file. */
async function backUpWebhookKey(config: Pick<Config, 'dataDir' | 'webhookKey'>, dir: string): Promise<BackupManifest['webhookKey']> {
  if (config.webhookKey !== undefined) return 'CUTOUT_WEBHOOK_KEY';
  try {
    await copyFile(join(config.dataDir, WEBHOOK_KEY_FILE), join(dir, WEBHOOK_KEY_FILE));
    return 'webhook.key';
  } catch (error) {
    if ((error as { code?: unknown }).code === 'ENOENT') return null;
    throw error;
  }
}

/** Copies `files` (relative to the data directory) into the backup: the size of each it copied, and those that were gone. */
async function copyAll(dataDir: string, dir: string, files: readonly string[]): Promise<{ copied: Map<string, number>; missing: string[] }> {
  const copied = new Map<string, number>();
  const missing: string[] = [];
  for (const file of files) {
    const size = await copyJobFile(dataDir, dir, file);
    if (size === undefined) missing.push(file);
    else copied.set(file, size);
  }
  return { copied, missing };
}

const totalBytes = (copied: Map<string, number>) => [...copied.values()].reduce((sum, size) => sum + size, 0);

/**
 * A SQLite data directory's backup. The order makes it consistent with the database's copy:
 * results are renamed into place before the row that names them commits, and never change
 * after, so every result the copy names is there to take after it; an uploaded image is
 * deleted once its item has ended, so the uploads are taken once before the copy too (an item
 * still to run in the copy may have ended, and its upload gone, by the time the copy is read).
 * Files the copy does not name (jobs made after it) are left out.
 */
async function backUpSqlite(config: Config, dir: string, withResults: boolean): Promise<BackupManifest> {
  const source = join(config.dataDir, DATABASE_FILE);
  if (!existsSync(source)) throw new UsageError(`there is no database at ${source} (CUTOUT_DATA_DIR): nothing to back up`);
  const early = withResults ? await copyAll(config.dataDir, dir, await listJobFiles(config.dataDir, (file) => file.includes('/inputs/'))) : undefined;
  const copy = join(dir, DATABASE_FILE);
  await copySqliteOnline(source, copy);
  const integrity = sqliteIntegrity(copy);
  if (integrity !== 'ok') throw new Error(`the database's copy fails SQLite's integrity check: ${integrity}`);
  const { jobFiles, ...facts } = describeSqliteDatabase(copy);
  let files: BackupManifest['jobFiles'] = { included: false };
  if (early) {
    const named = new Set(jobFiles);
    for (const file of early.copied.keys()) {
      if (named.has(file)) continue;
      // An upload of a job the copy does not have (made after it): not part of this backup.
      await rm(join(dir, file), { force: true });
      early.copied.delete(file);
    }
    const late = await copyAll(config.dataDir, dir, jobFiles.filter((file) => !early.copied.has(file)));
    await pruneEmptyFolders(join(dir, 'jobs'));
    const copied = new Map([...early.copied, ...late.copied]);
    files = { included: true, files: copied.size, bytes: totalBytes(copied), missing: late.missing };
  }
  return {
    format: BACKUP_FORMAT,
    cutoutVersion: CUTOUT_VERSION,
    createdAt: new Date().toISOString(),
    database: { engine: 'sqlite', file: DATABASE_FILE, ...facts },
    webhookKey: await backUpWebhookKey(config, dir),
    jobFiles: files,
  };
}

/** Removes `folder` and every folder under it that holds no file; true when `folder` is gone. */
async function pruneEmptyFolders(folder: string): Promise<boolean> {
  let entries;
  try {
    entries = await readdir(folder, { withFileTypes: true });
  } catch (error) {
    if ((error as { code?: unknown }).code === 'ENOENT') return true;
    throw error;
  }
  let kept = 0;
  for (const entry of entries) if (!entry.isDirectory() || !(await pruneEmptyFolders(join(folder, entry.name)))) kept++;
  if (kept === 0) await rm(folder, { recursive: true });
  return kept === 0;
}

/**
 * A PostgreSQL deployment's backup: the data directory's part only. The database is pg_dump's
 * to copy, into the same directory and first, so that every result the dump names is already
 * there to copy here (the extra results of jobs that ended in between are never read).
 */
async function backUpPostgres(config: Config & { databaseUrl: string }, dir: string, withResults: boolean): Promise<BackupManifest> {
  const status = await readMigrationStatus(config);
  let files: BackupManifest['jobFiles'] = { included: false };
  if (withResults) {
    const { copied, missing } = await copyAll(config.dataDir, dir, await listJobFiles(config.dataDir));
    files = { included: true, files: copied.size, bytes: totalBytes(copied), missing };
  }
  return {
    format: BACKUP_FORMAT,
    cutoutVersion: CUTOUT_VERSION,
    createdAt: new Date().toISOString(),
    database: {
      engine: 'postgres',
      database: status.database,
      migrations: [...status.applied, ...status.unknown].map((migration) => migration.name).sort(),
      dump: existsSync(join(dir, POSTGRES_DUMP_FILE)) ? POSTGRES_DUMP_FILE : null,
    },
    webhookKey: await backUpWebhookKey(config, dir),
    jobFiles: files,
  };
}

function describeKey(key: BackupManifest['webhookKey']): string {
  if (key === 'webhook.key') return 'webhook.key (the webhook signing key: keep this backup as secret as the server)';
  if (key === 'CUTOUT_WEBHOOK_KEY') return 'no webhook key: CUTOUT_WEBHOOK_KEY gives it, keep it with your secrets';
  return 'no webhook key (none made yet)';
}

const megabytes = (bytes: number) => `${(bytes / 1e6).toFixed(1)} MB`;

/**
 * `cutout backup DIR [--with-results]`: see {@link BACKUP_USAGE}. DIR is made (mode 0700) or
 * must be empty; `manifest.json` is written last, so a directory without it is not a backup.
 */
export async function backupCommand(args: string[], config: Config, print: (line: string) => void = console.log): Promise<void> {
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options: { 'with-results': { type: 'boolean', default: false } } });
  if (positionals.length !== 1) throw new UsageError('backup needs one DIR, a new or empty directory');
  const dir = resolve(positionals[0]);
  if (resolve(config.dataDir) === dir) throw new UsageError('a backup goes outside the data directory');
  await mkdir(dir, { recursive: true, mode: 0o700 });
  // With PostgreSQL, pg_dump's file may be there already: the dump comes first.
  const present = (await readdir(dir)).filter((name) => !(config.databaseUrl && name === POSTGRES_DUMP_FILE));
  if (present.length > 0) throw new UsageError(`${dir} is not empty: a backup goes into a new or empty directory${config.databaseUrl ? ` (or one holding only pg_dump's ${POSTGRES_DUMP_FILE})` : ''}`);
  const withResults = values['with-results'];
  const manifest = config.databaseUrl ? await backUpPostgres({ ...config, databaseUrl: config.databaseUrl }, dir, withResults) : await backUpSqlite(config, dir, withResults);
  await writeManifest(dir, manifest);

  const { database, jobFiles } = manifest;
  print(`Backed up ${config.dataDir} into ${dir}:`);
  if (database.engine === 'sqlite') print(`  the database, at migration ${database.migrations.at(-1) ?? '(none)'}: ${describeContents(database)}`);
  print(`  ${describeKey(manifest.webhookKey)}`);
  if (jobFiles.included) {
    print(`  ${jobFiles.files} job file${jobFiles.files === 1 ? '' : 's'} (${megabytes(jobFiles.bytes)})${jobFiles.missing.length ? `; ${jobFiles.missing.length} named by the database were gone before they could be copied (jobs being deleted at the end of their retention, or uploads whose item had just ended)` : ''}`);
  } else {
    print('  no job files (--with-results copies them)');
  }
  if (database.engine === 'postgres' && database.dump) {
    print(`  beside pg_dump's ${POSTGRES_DUMP_FILE}, made before: the database (PostgreSQL ${database.database}, now at migration ${database.migrations.at(-1) ?? '(none)'})`);
  } else if (database.engine === 'postgres') {
    print(`The database (PostgreSQL ${database.database}, at migration ${database.migrations.at(-1) ?? '(none)'}) is not in it: pg_dump copies it. Dump it into the empty directory first, then run this command, so that every result the dump names is here:`);
    print(`  pg_dump --format=custom --file ${join(dir, POSTGRES_DUMP_FILE)} "$DATABASE_URL"`);
  }
}
