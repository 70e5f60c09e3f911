import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { SqliteDatabaseFacts } from '../store/sqlite-backup.js';
import { UsageError } from './usage-error.js';

/** The manifest's format; a restore refuses any other. */
export const BACKUP_FORMAT = 'cutout-backup/1';
/** Written last: a directory without it is not a whole backup. */
export const MANIFEST_FILE = 'manifest.json';
/** The database's copy in a SQLite backup. */
export const DATABASE_FILE = 'cutout.sqlite';
/** Where the docs' pg_dump command writes a PostgreSQL backup's database, beside the rest. */
export const POSTGRES_DUMP_FILE = 'cutout.pgdump';

/** What one backup holds, in `manifest.json` beside it. */
export interface BackupManifest {
  format: typeof BACKUP_FORMAT;
  /** The Cutout that took it. */
  cutoutVersion: string;
  createdAt: string;
  database:
    | ({ engine: 'sqlite'; file: typeof DATABASE_FILE } & Omit<SqliteDatabaseFacts, 'jobFiles'>)
    /** Dumped by pg_dump, not by Cutout: `dump` is {@link POSTGRES_DUMP_FILE} when it was in the directory before the backup. */
    | { engine: 'postgres'; database: string; migrations: string[]; dump: typeof POSTGRES_DUMP_FILE | null };
  /**
   * `webhook.key`: the data directory's key, copied. `CUTOUT_WEBHOOK_KEY`: the key was given
   * in the environment and is not here. Null: no key had been made yet.
   */
  webhookKey: 'webhook.key' | 'CUTOUT_WEBHOOK_KEY' | null;
  /** The jobs' files (results, uploads still to run), under `jobs/` as in the data directory. */
  jobFiles: { included: false } | { included: true; files: number; bytes: number; /** Named by the database, gone before they could be copied. */ missing: string[] };
}

export async function writeManifest(dir: string, manifest: BackupManifest): Promise<void> {
  await writeFile(join(dir, MANIFEST_FILE), `${JSON.stringify(manifest, null, 2)}\n`, { mode: 0o600 });
}

/** The manifest of the backup in `dir`; a usage error when there is none or it is not one this Cutout reads. */
export async function readManifest(dir: string): Promise<BackupManifest> {
  let text: string;
  try {
    text = await readFile(join(dir, MANIFEST_FILE), 'utf8');
  } catch (error) {
    if ((error as { code?: unknown }).code === 'ENOENT') throw new UsageError(`${dir} is not a whole Cutout backup: it has no ${MANIFEST_FILE}`);
    throw error;
  }
  const manifest = JSON.parse(text) as Partial<BackupManifest>;
  if (manifest.format !== BACKUP_FORMAT) throw new UsageError(`${join(dir, MANIFEST_FILE)} is not a backup this Cutout reads (format ${JSON.stringify(manifest.format)}, expected ${BACKUP_FORMAT})`);
  return manifest as BackupManifest;
}

/** "3 user tokens (1 revoked), 1 account, 2 jobs (2 finished), 14 removals counted" */
export function describeContents(facts: Omit<SqliteDatabaseFacts, 'jobFiles' | 'migrations'>): string {
  const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;
  return [
    `${plural(facts.userTokens, 'user token')}${facts.revokedUserTokens ? ` (${facts.revokedUserTokens} revoked)` : ''}`,
    plural(facts.accounts, 'account'),
    `${plural(facts.jobs, 'job')}${facts.jobs ? ` (${facts.finishedJobs} finished)` : ''}`,
    `${plural(facts.countedRemovals, 'removal')} counted`,
  ].join(', ');
}
