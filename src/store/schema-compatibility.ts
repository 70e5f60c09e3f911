import { sql, type Kysely } from 'kysely';

/**
 * Whether this Cutout may serve on a database a newer Cutout migrated. Migrations are additive
 * within a minor version (src/store/migrations.ts), so an older replica that restarts during a
 * rolling upgrade can serve on the newer schema; the schema itself says which releases it
 * serves (`cutout_schema.serves_from`, raised by a migration that breaks older code), since an
 * older release cannot know what a newer one changed.
 */
export interface NewerSchema {
  /** The migrations the database records and this Cutout does not know, in order. */
  migrations: string[];
  /** The oldest release whose code serves on the schema, as the database records it. */
  servesFrom: string;
}

/** Thrown when this Cutout may not start on the database; the message says what to do. */
export class SchemaTooNewError extends Error {
  override readonly name = 'SchemaTooNewError';
}

/** Compares two releases' `major.minor.patch` numerically (a pre-release suffix is ignored). */
export function compareReleases(a: string, b: string): number {
  const parts = (version: string) => version.split(/[-+]/, 1)[0].split('.').map((part) => Number.parseInt(part, 10) || 0);
  const [left, right] = [parts(a), parts(b)];
  for (let index = 0; index < 3; index++) {
    const difference = (left[index] ?? 0) - (right[index] ?? 0);
    if (difference !== 0) return Math.sign(difference);
  }
  return 0;
}

/** `cutout_schema.serves_from`: read only where migration 0008 ran, which made the table. */
export async function readServesFrom(db: Kysely<unknown>, schema?: string): Promise<string | undefined> {
  const table = sql.table(schema ? `${schema}.cutout_schema` : 'cutout_schema');
  return (await sql<{ serves_from: string }>`select serves_from from ${table} where id = 1`.execute(db)).rows[0]?.serves_from;
}

/**
 * The verdict on a database whose migrations include `unknown` ones: a {@link NewerSchema} when
 * `version` may serve on it, else a {@link SchemaTooNewError} naming the way out. It may not when
 * a migration this Cutout knows is missing there (not a newer Cutout's database but another
 * line's), or when the schema serves only releases after `version`.
 */
export function judgeNewerSchema(state: { unknown: string[]; pending: string[]; servesFrom: string | undefined }, version: string): NewerSchema | SchemaTooNewError {
  const named = state.unknown.join(', ');
  if (state.pending.length > 0 || state.servesFrom === undefined) {
    return new SchemaTooNewError(`the database records migrations this Cutout ${version} does not know (${named}) and lacks ${state.pending.join(', ') || 'the table cutout_schema'} that it does: it was not migrated by a newer release of this Cutout; restore the backup taken before it was`);
  }
  if (compareReleases(version, state.servesFrom) < 0) {
    return new SchemaTooNewError(`the database was migrated by a newer Cutout (${named}), whose schema serves Cutout ${state.servesFrom} and later; this is ${version}: run the newer version, or restore the backup taken before the upgrade (docs/operations.md, "Upgrade and rollback")`);
  }
  return { migrations: state.unknown, servesFrom: state.servesFrom };
}

/** What opening a store may tell its caller about the schema it found. */
export interface SchemaWatch {
  /** Called when a newer Cutout migrated the database and this one serves on it without migrating. */
  onNewerSchema?: (newer: NewerSchema) => void;
}
