import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import { DEFAULT_MIGRATION_TABLE, Kysely, Migrator, SqliteDialect, type MigrationProvider } from 'kysely';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { TokenService } from '../src/auth/token-service.js';
import { migrationProvider } from '../src/store/migrations.js';
import { openPostgresStore } from '../src/store/postgres-store.js';
import { CurrentSchemaPostgresDialect } from '../src/store/postgres-introspector.js';
import { compareReleases, type SchemaWatch } from '../src/store/schema-compatibility.js';
import { openSqliteStore } from '../src/store/sqlite-store.js';
import type { Store } from '../src/store/store.js';
import { asJson, postgresShape, sqliteShape, type PreviousRelease, type RecordedStatement, type SchemaShape } from './fixtures/previous-schema/shape.js';
import { runCli } from './helpers/cli.js';

// The upgrade policy (src/store/migrations.ts, docs/operations.md): within a minor version,
// migrations only add, so that the previous release's code keeps working on the newer schema
// (older replicas during a rolling upgrade) and the current code takes over the previous
// release's data. The previous release is frozen in test/fixtures/previous-schema/: the
// shape of its schema, and every statement its store sent during a workload that calls each
// store method, with the answers it got (record.ts made them from that release's own code).

const release = (engine: 'sqlite' | 'postgres') => JSON.parse(readFileSync(new URL(`./fixtures/previous-schema/${engine}.json`, import.meta.url), 'utf8')) as PreviousRelease;

/** One database to migrate, inspect and replay statements on, and the current store over it. */
interface Place {
  migrateTo(name: string): Promise<void>;
  shape(): Promise<SchemaShape>;
  /** Runs the statements in order on one connection; each one's rows and rows changed. */
  replay(statements: readonly RecordedStatement[]): Promise<{ rows: Record<string, unknown>[]; affected?: number }[]>;
  /** Opens the current store on it, which migrates it to the latest schema as a start does. */
  openStore(watch?: SchemaWatch): Promise<Store>;
  dispose(): Promise<void>;
}

/** The current migrations, up to `last` only: a Migrator of the previous release. */
const migrationsUpTo = (last: string): MigrationProvider => ({
  getMigrations: async () => Object.fromEntries(Object.entries(await migrationProvider.getMigrations()).filter(([name]) => name <= last)),
});

async function migrateWith(db: Kysely<unknown>, provider: MigrationProvider, target: string, schema?: string): Promise<void> {
  const migrator = new Migrator({ db, provider, migrationTableSchema: schema });
  const { error } = target === 'latest' ? await migrator.migrateToLatest() : await migrator.migrateTo(target);
  if (error) throw error;
}

async function sqlitePlace(): Promise<Place & { dataDir: string }> {
  const dataDir = await mkdtemp(join(tmpdir(), 'cutout-upgrade-'));
  const file = join(dataDir, 'cutout.sqlite');
  const stores: Store[] = [];
  const withDatabase = async <T>(run: (database: SQLite.Database) => Promise<T> | T): Promise<T> => {
    const database = new SQLite(file);
    database.pragma('foreign_keys = ON');
    try {
      return await run(database);
    } finally {
      database.close();
    }
  };
  return {
    dataDir,
    migrateTo: (name) => withDatabase((database) => migrateWith(new Kysely({ dialect: new SqliteDialect({ database }) }), migrationProvider, name)),
    shape: () => withDatabase(sqliteShape),
    replay: (statements) =>
      withDatabase((database) =>
        statements.map((statement) => {
          const prepared = database.prepare(statement.sql);
          if (prepared.reader) return { rows: asJson(prepared.all(...statement.parameters) as Record<string, unknown>[]) };
          return { rows: [], affected: prepared.run(...statement.parameters).changes };
        }),
      ),
    async openStore(watch) {
      const store = await openSqliteStore(dataDir, watch);
      stores.push(store);
      return store;
    },
    async dispose() {
      for (const store of stores) await store.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

async function postgresPlace(url: string): Promise<Place> {
  const schema = `cutout_upgrade_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  await admin.query(`create schema ${schema}`);
  const stores: Store[] = [];
  const inSchema = () => ({ connectionString: url, options: `-c search_path=${schema}` });
  return {
    async migrateTo(name) {
      const db = new Kysely<unknown>({ dialect: new CurrentSchemaPostgresDialect({ pool: new pg.Pool({ ...inSchema(), max: 1 }) }) });
      try {
        await migrateWith(db, migrationProvider, name, schema);
      } finally {
        await db.destroy();
      }
    },
    shape: () => postgresShape(admin, schema),
    async replay(statements) {
      const client = new pg.Client(inSchema());
      await client.connect();
      try {
        const answers = [];
        for (const statement of statements) {
          const result = await client.query(statement.sql, statement.parameters);
          // As Kysely's PostgreSQL driver counts them.
          const counts = ['INSERT', 'UPDATE', 'DELETE', 'MERGE'].includes(result.command);
          answers.push({ rows: asJson(result.rows as Record<string, unknown>[]), ...(counts ? { affected: result.rowCount ?? 0 } : {}) });
        }
        return answers;
      } finally {
        await client.end();
      }
    },
    async openStore(watch) {
      const store = await openPostgresStore(url, { schema, ...watch });
      stores.push(store);
      return store;
    },
    async dispose() {
      for (const store of stores) await store.close();
      await admin.query(`drop schema if exists ${schema} cascade`);
      await admin.end();
    },
  };
}

/** Where the current schema breaks a promise to the previous one: a table, column or index gone or changed, or a new column old inserts cannot fill. */
function breaches(previous: SchemaShape, current: SchemaShape): string[] {
  const found: string[] = [];
  for (const [table, columns] of Object.entries(previous.tables)) {
    const now = current.tables[table];
    if (!now) {
      found.push(`table ${table} is gone`);
      continue;
    }
    for (const [column, shape] of Object.entries(columns)) {
      if (!now[column]) found.push(`${table}.${column} is gone`);
      else if (JSON.stringify(now[column]) !== JSON.stringify(shape)) found.push(`${table}.${column} was ${JSON.stringify(shape)}, is ${JSON.stringify(now[column])}`);
    }
    for (const [column, shape] of Object.entries(now)) {
      if (!columns[column] && shape.notNull && shape.default === null) found.push(`${table}.${column} is new, NOT NULL and without a default: the previous code's inserts fail`);
    }
  }
  for (const [index, definition] of Object.entries(previous.indexes)) {
    if (current.indexes[index] !== definition) found.push(`index ${index} was ${definition}, is ${current.indexes[index] ?? 'gone'}`);
  }
  return found;
}

/** The statements whose replayed answer differs from the recorded one; extra columns (a `select *` of a table that grew) are not a difference. */
function differences(statements: readonly RecordedStatement[], replayed: Awaited<ReturnType<Place['replay']>>): string[] {
  const found: string[] = [];
  statements.forEach((statement, i) => {
    const answer = replayed[i];
    const projected = answer.rows.map((row, r) => Object.fromEntries(Object.keys(statement.rows[r] ?? row).map((key) => [key, row[key]])));
    if (JSON.stringify(projected) !== JSON.stringify(statement.rows)) found.push(`#${i} ${statement.sql}: read ${JSON.stringify(projected)}, the previous schema gave ${JSON.stringify(statement.rows)}`);
    if (statement.affected !== undefined && answer.affected !== statement.affected) found.push(`#${i} ${statement.sql}: changed ${answer.affected} rows, the previous schema ${statement.affected}`);
  });
  return found;
}

const engines = [
  { name: 'sqlite' as const, skip: false, place: () => sqlitePlace() },
  { name: 'postgres' as const, skip: !process.env.DATABASE_URL, place: () => postgresPlace(process.env.DATABASE_URL!) },
];

describe.each(engines)('$name: the previous release against the current code', (engine) => {
  const previous = release(engine.name);
  const places: Place[] = [];
  const place = async () => {
    const made = await engine.place();
    places.push(made);
    return made;
  };
  afterEach(async () => {
    for (const made of places.splice(0)) await made.dispose();
  });

  it.skipIf(engine.skip)(`the migrations up to ${previous.lastMigration} still make ${previous.version}'s schema exactly (a released migration is never edited)`, async () => {
    const at = await place();
    await at.migrateTo(previous.lastMigration);
    expect(await at.shape()).toEqual(previous.schema);
  });

  it.skipIf(engine.skip)('the latest schema keeps every table, column (same type, nullability, default) and index of the previous one, and its new columns can be left out of an insert', async () => {
    const at = await place();
    await at.migrateTo('latest');
    expect(breaches(previous.schema, await at.shape())).toEqual([]);
  });

  it.skipIf(engine.skip)(`every statement ${previous.version}'s store sent gives the same answer on the latest schema (an older replica during a rolling upgrade)`, async () => {
    const at = await place();
    await at.migrateTo('latest');
    expect(differences(previous.statements, await at.replay(previous.statements))).toEqual([]);
  });

  it.skipIf(engine.skip)(`${previous.version}'s data, migrated by the current code's start, reads as ${previous.version} read it, takes new writes, and its Token ID is exchanged`, async () => {
    const at = await place();
    await at.migrateTo(previous.lastMigration);
    await at.replay(previous.statements);
    const store = await at.openStore();
    const now = asJson({
      listUserTokens: await store.listUserTokens(),
      listAccounts: await store.listAccounts(),
      listDailyUsage: await store.listDailyUsage('acc-1', '2026-01-01'),
      findJob: await store.findJob('job-1', 'tok-a'),
      listJobs: await store.listJobs('tok-a', 10),
      countJobItems: await store.countJobItems('job-1'),
      listJobItems: await store.listJobItems('job-1', 0, 10),
      countJobItemsCancelled: await store.countJobItems('job-2'),
      findWebhookDelivery: await store.findWebhookDelivery('job-1'),
      findDashboardSession: await store.findDashboardSession('sess-1'),
    });
    expect(now).toMatchObject(previous.answers);

    await store.recordRemoval('tok-a', '2026-01-01', 'succeeded', 1);
    const [day] = await store.listDailyUsage('acc-1', '2026-01-01');
    expect(day.succeeded).toBe((previous.answers.listDailyUsage as { succeeded: number }[])[0].succeeded + 1);
    const grant = await new TokenService(store, { managedTokenTtl: 60 }).exchange(previous.tokenId);
    expect(grant).toHaveProperty('managedToken');
  });

  it.skipIf(engine.skip)('the current code starts, without migrating, on a schema a newer release changed additively, and is refused once that schema no longer serves it', async () => {
    const at = await place();
    await at.migrateTo('latest');
    // What a newer release's start would do: one additive migration, recorded as Kysely does.
    const newer = '9999-from-a-newer-release';
    const statement = (text: string, parameters: unknown[] = []) => ({ sql: text, parameters, rows: [] });
    await at.replay([
      statement('alter table user_tokens add column newer_note text'),
      statement(`insert into ${DEFAULT_MIGRATION_TABLE} (name, timestamp) values (${engine.name === 'sqlite' ? '?, ?' : '$1, $2'})`, [newer, new Date().toISOString()]),
    ]);
    const told: unknown[] = [];
    const store = await at.openStore({ onNewerSchema: (found) => told.push(found) });
    expect(told).toEqual([{ migrations: [newer], servesFrom: '0.1.0' }]);
    const tokens = new TokenService(store, { managedTokenTtl: 60 });
    const { tokenId } = await tokens.createUserToken('during-the-roll');
    expect(await tokens.exchange(tokenId)).toHaveProperty('managedToken');
    await store.close();

    await at.replay([statement(`update cutout_schema set serves_from = '99.0.0'`)]);
    await expect(at.openStore()).rejects.toThrow(/migrated by a newer Cutout \(9999-from-a-newer-release\), whose schema serves Cutout 99\.0\.0 and later; this is \d+\.\d+\.\d+/);
  });

  it.skipIf(engine.skip)(`a server of ${previous.version} does not start on the latest schema: Kysely's Migrator refuses a database with a migration it does not know`, async () => {
    const at = await place();
    await at.migrateTo('latest');
    const newer = Object.keys(await migrationProvider.getMigrations()).filter((name) => name > previous.lastMigration);
    expect(newer.length, 'no migration since the previous release: nothing to check').toBeGreaterThan(0);
    const store = await at.openStore();
    await store.close();
    const db =
      engine.name === 'sqlite'
        ? new Kysely<unknown>({ dialect: new SqliteDialect({ database: new SQLite(join((at as Place & { dataDir: string }).dataDir, 'cutout.sqlite')) }) })
        : undefined;
    if (!db) return; // the same Migrator on PostgreSQL: checked on SQLite, where it needs no schema.
    try {
      await expect(migrateWith(db, migrationsUpTo(previous.lastMigration), 'latest')).rejects.toThrow(`corrupted migrations: previously executed migration ${newer[0]} is missing`);
    } finally {
      await db.destroy();
    }
  });
});

describe('cutout migrate', () => {
  const previous = release('sqlite');
  let made: (Place & { dataDir: string }) | undefined;
  afterEach(async () => {
    await made?.dispose();
    made = undefined;
  });
  const recorded = (dataDir: string) => {
    const database = new SQLite(join(dataDir, 'cutout.sqlite'), { readonly: true });
    try {
      return (database.prepare(`select name from ${DEFAULT_MIGRATION_TABLE} order by name`).all() as { name: string }[]).map((row) => row.name);
    } finally {
      database.close();
    }
  };

  it(`--status lists a ${previous.version} database's applied and pending migrations and changes nothing; migrate applies them`, { timeout: 60_000 }, async () => {
    made = await sqlitePlace();
    await made.migrateTo(previous.lastMigration);
    const env = { CUTOUT_DATA_DIR: made.dataDir };
    const before = recorded(made.dataDir);
    const pending = Object.keys(await migrationProvider.getMigrations()).filter((name) => name > previous.lastMigration).sort();

    const status = await runCli(['migrate', '--status'], { env });
    expect(status.code, status.stderr).toBe(0);
    for (const name of before) expect(status.stdout).toMatch(new RegExp(`^applied +${name} +\\d{4}-`, 'm'));
    for (const name of pending) expect(status.stdout).toMatch(new RegExp(`^pending +${name} +-$`, 'm'));
    expect(recorded(made.dataDir)).toEqual(before);

    const migrate = await runCli(['migrate'], { env });
    expect(migrate.code, migrate.stderr).toBe(0);
    expect(migrate.stdout).toContain(pending.join(', '));
    expect(recorded(made.dataDir)).toEqual([...before, ...pending]);
    const again = await runCli(['migrate', '--status'], { env });
    expect(again.stdout).toContain(`Up to date, at ${pending.at(-1)}.`);
  });

  it('on a database a newer Cutout migrated, --status names the newer migration and says this version serves on it; exits 1 and migrate refuses once the schema no longer serves it', { timeout: 60_000 }, async () => {
    made = await sqlitePlace();
    await made.migrateTo('latest');
    const database = new SQLite(join(made.dataDir, 'cutout.sqlite'));
    database.prepare(`insert into ${DEFAULT_MIGRATION_TABLE} (name, timestamp) values (?, ?)`).run('9999-from-a-newer-release', new Date().toISOString());
    const env = { CUTOUT_DATA_DIR: made.dataDir };
    const status = await runCli(['migrate', '--status'], { env });
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toMatch(/^newer +9999-from-a-newer-release /m);
    expect(status.stdout).toMatch(/its schema serves Cutout 0\.1\.0 and later, so this version \(\S+\) starts on it and migrates nothing/);
    const migrate = await runCli(['migrate'], { env });
    expect(migrate.code, migrate.stderr).toBe(0);
    expect(migrate.stdout).toContain('starts on it and migrates nothing');

    database.prepare(`update cutout_schema set serves_from = '99.0.0'`).run();
    database.close();
    const refused = await runCli(['migrate', '--status'], { env });
    expect(refused.code).toBe(1);
    expect(refused.stdout).toContain('was migrated by a newer Cutout (9999-from-a-newer-release), whose schema serves Cutout 99.0.0 and later');
    const migrateRefused = await runCli(['migrate'], { env });
    expect(migrateRefused.code).toBe(1);
    expect(migrateRefused.stderr).toContain('run the newer version, or restore the backup taken before the upgrade');
  });
});

describe('compareReleases', () => {
  it('orders releases by their numbers, not as text', () => {
    expect(compareReleases('0.10.0', '0.9.3')).toBe(1);
    expect(compareReleases('0.1.0', '0.1.0')).toBe(0);
    expect(compareReleases('1.2.3-rc.1', '1.2.3')).toBe(0);
    expect(compareReleases('0.1.9', '0.2.0')).toBe(-1);
  });
});
