import { parseArgs } from 'node:util';
import type { Config } from '../config.js';
import { CUTOUT_VERSION } from '../cutout-version.js';
import { readMigrationStatus, type MigrationStatus } from '../store/migration-status.js';
import { openStore } from '../store/open-store.js';
import { judgeNewerSchema, SchemaTooNewError } from '../store/schema-compatibility.js';
import { printTable } from './print-table.js';
import { UsageError } from './usage-error.js';

export const MIGRATE_USAGE = `  cutout migrate [--status]               applies the database's pending migrations (every server start does too);
                                          --status lists the applied and pending ones and changes nothing`;

const lastOf = (status: MigrationStatus) => [...status.applied, ...status.unknown].map((migration) => migration.name).sort().at(-1) ?? '(none)';

/** One line per migration: applied ones with their time, then those of a newer Cutout, then pending ones. */
function printStatus(status: MigrationStatus): void {
  console.log(`Database: ${status.database}`);
  printTable([
    ['STATE', 'MIGRATION', 'APPLIED'],
    ...status.applied.map((migration) => ['applied', migration.name, migration.at]),
    ...status.unknown.map((migration) => ['newer', migration.name, migration.at]),
    ...status.pending.map((name) => ['pending', name, '-']),
  ]);
}

/**
 * What this Cutout does on a database a newer one migrated: serves on it without migrating
 * (with the line to print) when the newer schema serves this version, else refuses.
 */
function newerSchemaVerdict(status: MigrationStatus): { serves: boolean; note: string } {
  const verdict = judgeNewerSchema({ unknown: status.unknown.map((migration) => migration.name), pending: status.pending, servesFrom: status.servesFrom }, CUTOUT_VERSION);
  if (verdict instanceof SchemaTooNewError) return { serves: false, note: `${status.database}: ${verdict.message}.` };
  return {
    serves: true,
    note: `${status.database} was migrated by a newer Cutout (${verdict.migrations.join(', ')}); its schema serves Cutout ${verdict.servesFrom} and later, so this version (${CUTOUT_VERSION}) starts on it and migrates nothing.`,
  };
}

/**
 * `cutout migrate [--status]`: the database's migrations against the ones this Cutout has.
 * `--status` only reads; without it the pending ones are applied as a server's start applies
 * them (through `openStore`, the one path that migrates). Exit status: 0, or 1 when a newer
 * Cutout migrated the database and its schema does not serve this version.
 */
export async function migrateCommand(args: string[], config: Pick<Config, 'databaseUrl' | 'dataDir'>): Promise<number> {
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options: { status: { type: 'boolean', default: false } } });
  if (positionals.length > 0) throw new UsageError(`migrate takes no ${JSON.stringify(positionals[0])}`);
  const before = await readMigrationStatus(config);
  const newer = before.unknown.length > 0 ? newerSchemaVerdict(before) : undefined;
  if (values.status) {
    printStatus(before);
    if (newer) console.log(newer.note);
    else if (before.pending.length > 0) console.log(`${before.pending.length} pending: cutout migrate applies ${before.pending.length === 1 ? 'it' : 'them'}, as the next server start would.`);
    else console.log(`Up to date, at ${lastOf(before)}.`);
    return newer && !newer.serves ? 1 : 0;
  }
  if (newer) {
    if (newer.serves) console.log(newer.note);
    else console.error(`cutout: ${newer.note}`);
    return newer.serves ? 0 : 1;
  }
  if (before.pending.length === 0) {
    console.log(`Nothing to migrate: ${before.database} is at ${lastOf(before)}.`);
    return 0;
  }
  await (await openStore(config)).close();
  const after = await readMigrationStatus(config);
  const ran = after.applied.filter((migration) => before.pending.includes(migration.name)).map((migration) => migration.name);
  console.log(`Applied ${ran.length === 1 ? 'one migration' : `${ran.length} migrations`} to ${after.database}: ${ran.join(', ')}; it is at ${lastOf(after)}.`);
  return 0;
}
