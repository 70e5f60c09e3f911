import { existsSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { parseWebhookKey, WEBHOOK_KEY_FILE } from '../auth/webhook-key.js';
import type { Config } from '../config.js';
import { knownMigrations } from '../store/migration-status.js';
import { describeSqliteDatabase, restoreSqlite, sqliteIntegrity } from '../store/sqlite-backup.js';
import { copyJobFile, listJobFiles } from './backup-files.js';
import { DATABASE_FILE, describeContents, POSTGRES_DUMP_FILE, readManifest, type BackupManifest } from './backup-manifest.js';
import { UsageError } from './usage-error.js';

const engineOf = (config: Pick<Config, 'databaseUrl'>) => (config.databaseUrl ? 'postgres' : 'sqlite');
const ENGINE_NAMES = { sqlite: 'SQLite (no DATABASE_URL)', postgres: 'PostgreSQL (DATABASE_URL)' } as const;

/** The backup's webhook key, and whether writing it would replace a different one. */
async function plannedKey(manifest: BackupManifest, dir: string, dataDir: string): Promise<{ key: string; replaces: boolean } | undefined> {
  if (manifest.webhookKey !== 'webhook.key') return undefined;
  const key = await readFile(join(dir, WEBHOOK_KEY_FILE), 'utf8');
  const present = await readFile(join(dataDir, WEBHOOK_KEY_FILE), 'utf8').catch((error: { code?: unknown }) => {
    if (error.code === 'ENOENT') return undefined;
    throw error;
  });
  return { key, replaces: present !== undefined && present.trim() !== key.trim() };
}

/** What the operator must know about the webhook key once the files are back. */
function keyNotes(manifest: BackupManifest, config: Pick<Config, 'webhookKey'>, restoredKey: string | undefined): string[] {
  if (manifest.webhookKey === 'CUTOUT_WEBHOOK_KEY' && config.webhookKey === undefined) {
    return ['The backup was taken with CUTOUT_WEBHOOK_KEY set: start the servers with that same key, or a new webhook.key is made and every token\'s webhook signing secret changes.'];
  }
  if (restoredKey !== undefined && config.webhookKey !== undefined && !parseWebhookKey(config.webhookKey, 'CUTOUT_WEBHOOK_KEY').equals(parseWebhookKey(restoredKey, WEBHOOK_KEY_FILE))) {
    return ['CUTOUT_WEBHOOK_KEY is set, differs from the restored webhook.key, and wins over it: every webhook signing secret differs from the backup\'s until it is unset.'];
  }
  return [];
}

/**
 * `cutout restore DIR [--force]`: puts a backup made by `cutout backup` back into the data
 * directory (the database last, once the files it names are there). Every refusal comes
 * before anything is written: a database, a different webhook key or job files already in
 * the data directory need --force; a database made by a newer Cutout is refused.
 */
export async function restoreCommand(args: string[], config: Config, print: (line: string) => void = console.log): Promise<void> {
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options: { force: { type: 'boolean', default: false } } });
  if (positionals.length !== 1) throw new UsageError('restore needs one DIR, made by cutout backup');
  const dir = resolve(positionals[0]);
  const force = values.force;
  const manifest = await readManifest(dir);
  const engine = engineOf(config);
  if (manifest.database.engine !== engine) {
    throw new UsageError(`this backup is of a deployment on ${ENGINE_NAMES[manifest.database.engine]}, and this configuration uses ${ENGINE_NAMES[engine]}: Cutout does not move data between the two`);
  }
  const known = new Set(await knownMigrations());
  const backupFile = join(dir, DATABASE_FILE);
  const backupMigrations = manifest.database.engine === 'sqlite' ? describeSqliteDatabase(backupFile).migrations : manifest.database.migrations;
  const newer = backupMigrations.filter((name) => !known.has(name));
  if (newer.length > 0) throw new UsageError(`the backup's database was migrated by a newer Cutout (${manifest.cutoutVersion}: ${newer.join(', ')}): restore it with that version or a later one`);

  const target = join(config.dataDir, DATABASE_FILE);
  const targetExists = engine === 'sqlite' && existsSync(target);
  if (targetExists && !force) {
    throw new UsageError(`${target} exists (${describeContents(describeSqliteDatabase(target))}); restoring replaces it: stop every server on this data directory, then run again with --force`);
  }
  const key = await plannedKey(manifest, dir, config.dataDir);
  if (key?.replaces && !force) throw new UsageError(`${join(config.dataDir, WEBHOOK_KEY_FILE)} holds another webhook key; restoring replaces it, and with it every token's webhook signing secret: run again with --force`);
  const backupFiles = manifest.jobFiles.included ? await listJobFiles(dir) : [];
  if (manifest.jobFiles.included) {
    const present = await listJobFiles(config.dataDir);
    if (present.length > 0 && !force) throw new UsageError(`${join(config.dataDir, 'jobs')} holds ${present.length} file${present.length === 1 ? '' : 's'}; restoring replaces the folder: run again with --force`);
  }

  await mkdir(config.dataDir, { recursive: true });
  if (manifest.jobFiles.included) {
    await rm(join(config.dataDir, 'jobs'), { recursive: true, force: true });
    for (const file of backupFiles) await copyJobFile(dir, config.dataDir, file);
  }
  if (key) await writeFile(join(config.dataDir, WEBHOOK_KEY_FILE), key.key, { mode: 0o600 });

  let databaseLine: string | undefined;
  if (manifest.database.engine === 'sqlite') {
    await restoreSqlite(backupFile, target, targetExists);
    const integrity = sqliteIntegrity(target);
    if (integrity !== 'ok') throw new Error(`the restored database fails SQLite's integrity check: ${integrity}`);
    const { jobFiles: _named, migrations, ...facts } = describeSqliteDatabase(target);
    const pending = [...known].filter((name) => !migrations.includes(name)).sort();
    databaseLine = `  the database, at migration ${migrations.at(-1) ?? '(none)'}: ${describeContents(facts)}${pending.length ? `; the next start (or cutout migrate) runs ${pending.join(', ')}` : ''}`;
  }

  print(`Restored into ${config.dataDir} the backup ${dir} (taken ${manifest.createdAt} by Cutout ${manifest.cutoutVersion}):`);
  if (databaseLine) print(databaseLine);
  print(`  ${key ? 'webhook.key' : 'no webhook key'}`);
  print(manifest.jobFiles.included ? `  ${backupFiles.length} job file${backupFiles.length === 1 ? '' : 's'}` : '  no job files: the backup has none, and the jobs folder was left as it was');
  for (const note of keyNotes(manifest, config, key?.key)) print(note);
  if (manifest.database.engine === 'postgres') {
    const dump = manifest.database.dump ? join(dir, manifest.database.dump) : 'DUMP_FILE';
    print(`The database is pg_restore's to put back, with every server stopped, before they start${manifest.database.dump ? '' : ` (this backup holds no ${POSTGRES_DUMP_FILE}: DUMP_FILE is the pg_dump made just before it)`}:`);
    print(`  pg_restore --clean --if-exists --no-owner --dbname "$DATABASE_URL" ${dump}`);
  }
}
