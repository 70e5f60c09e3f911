import { parseArgs } from 'node:util';
import type { Config } from '../config.js';
import { readMigrationStatus, type MigrationStatus } from '../store/migration-status.js';
import { openStore } from '../store/open-store.js';
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
 * Why this Cutout will not migrate (or start on) the database: a newer one already did.
 * Kysely's Migrator refuses a database that records a migration it does not know.
 */
function newerSchemaNote(status: MigrationStatus): string {
  return `${status.database} was migrated by a newer Cutout (${status.unknown.map((migration) => migration.name).join(', ')}): this version does not migrate it, nor can a server of this version start on it (docs/operations.md, "Upgrade and rollback").`;
}

/**
 * `cutout migrate [--status]`: the database's migrations against the ones this Cutout has.
 * `--status` only reads; without it the pending ones are applied as a server's start applies
 * them (through `openStore`, the one path that migrates). Exit status: 0, or 1 when the
 * database is newer than this Cutout.
 */
export async function migrateCommand(args: string[], config: Pick<Config, 'databaseUrl' | 'dataDir'>): Promise<number> {
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options: { status: { type: 'boolean', default: false } } });
  if (positionals.length > 0) throw new UsageError(`migrate takes no ${JSON.stringify(positionals[0])}`);
  const before = await readMigrationStatus(config);
  if (values.status) {
    printStatus(before);
    if (before.unknown.length > 0) console.log(newerSchemaNote(before));
    else if (before.pending.length > 0) console.log(`${before.pending.length} pending: cutout migrate applies ${before.pending.length === 1 ? 'it' : 'them'}, as the next server start would.`);
    else console.log(`Up to date, at ${lastOf(before)}.`);
    return before.unknown.length > 0 ? 1 : 0;
  }
  if (before.unknown.length > 0) {
    console.error(`cutout: ${newerSchemaNote(before)}`);
    return 1;
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
