import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import { afterEach, beforeEach } from 'vitest';
import pg from 'pg';
import { openPostgresStore } from '../../src/store/postgres-store.js';
import { openSqliteStore } from '../../src/store/sqlite-store.js';
import type { Store } from '../../src/store/store.js';

/**
 * One empty place for a store: a temporary directory (SQLite) or a fresh schema (PostgreSQL).
 * `open()` may be called several times; every call opens the same data.
 */
export interface StorePlace {
  /** Opens (and migrates) a store over this place's data. */
  open(): Promise<Store>;
  /** Every stored value of every table, as text, to check what never reaches the disk. */
  rawContents(): Promise<string>;
  /** Closes the stores still open here, then deletes the directory or drops the schema. */
  dispose(): Promise<void>;
}

/** A database engine the store runs on. */
export interface StoreEngine {
  name: 'sqlite' | 'postgres';
  /** True when this engine cannot run here; use with `describe.skipIf` so vitest reports it skipped. */
  skip: boolean;
  /** Makes a new, empty place for a store. */
  createPlace(): Promise<StorePlace>;
}

/** Wraps `open` so that `dispose` can close what the test left open, and only that. */
function trackStores(open: () => Promise<Store>) {
  const live = new Set<Store>();
  return {
    async open(): Promise<Store> {
      const store = await open();
      live.add(store);
      // Closing twice would throw for PostgreSQL (the pool ends once), so `close` forgets the store.
      const close = async () => {
        if (live.delete(store)) await store.close();
      };
      return new Proxy(store, {
        get: (target, property) => (property === 'close' ? close : Reflect.get(target, property)),
      });
    },
    async closeAll(): Promise<void> {
      const stores = [...live];
      live.clear();
      await Promise.all(stores.map((store) => store.close()));
    },
  };
}

async function createSqlitePlace(): Promise<StorePlace> {
  const dataDir = await mkdtemp(join(tmpdir(), 'cutout-store-'));
  const stores = trackStores(() => openSqliteStore(dataDir));
  return {
    open: stores.open,
    // The database file and, if a store is still open, its WAL: byte for byte.
    async rawContents() {
      const files = await readdir(dataDir);
      const contents = await Promise.all(files.map((file) => readFile(join(dataDir, file))));
      return Buffer.concat(contents).toString('latin1');
    },
    async dispose() {
      await stores.closeAll();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

async function withClient<T>(url: string, run: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await run(client);
  } finally {
    await client.end();
  }
}

async function createPostgresPlace(url: string): Promise<StorePlace> {
  const schema = `cutout_test_${randomBytes(6).toString('hex')}`;
  const stores = trackStores(() => openPostgresStore(url, { schema }));
  return {
    open: stores.open,
    async rawContents() {
      return withClient(url, async (client) => {
        const tables = await client.query<{ table_name: string }>('select table_name from information_schema.tables where table_schema = $1', [schema]);
        // One query at a time: a pg.Client runs them in turn anyway, and pg 8.23 deprecates overlapping them.
        const dumps: string[] = [];
        for (const { table_name } of tables.rows) {
          const rows = await client.query(`select * from ${client.escapeIdentifier(schema)}.${client.escapeIdentifier(table_name)}`);
          dumps.push(JSON.stringify(rows.rows));
        }
        return dumps.join('\n');
      });
    },
    async dispose() {
      await stores.closeAll();
      await withClient(url, (client) => client.query(`drop schema if exists ${client.escapeIdentifier(schema)} cascade`));
    },
  };
}

let skipNoticePrinted = false;

/**
 * The engines the store tests run on: SQLite always; PostgreSQL when DATABASE_URL is set,
 * otherwise reported as skipped (with one loud line on stderr), never passed silently.
 *
 * @example
 * describe.each(storeEngines())('$name store', (engine) => { … }) // with describe.skipIf(engine.skip) inside
 */
export function storeEngines(): StoreEngine[] {
  const url = process.env.DATABASE_URL;
  if (!url && !skipNoticePrinted) {
    skipNoticePrinted = true;
    process.stderr.write('\n[cutout tests] PostgreSQL store tests SKIPPED: DATABASE_URL is not set (e.g. DATABASE_URL=postgres://postgres@127.0.0.1:5432/test)\n\n');
  }
  return [
    { name: 'sqlite', skip: false, createPlace: createSqlitePlace },
    {
      name: 'postgres',
      skip: !url,
      createPlace: () => {
        if (!url) throw new Error('DATABASE_URL is not set');
        return createPostgresPlace(url);
      },
    },
  ];
}

/** `PRAGMA integrity_check` of a data directory's database, opened as a fresh connection would. */
export function integrityCheck(dataDir: string): string {
  const database = new SQLite(join(dataDir, 'cutout.sqlite'));
  try {
    return (database.pragma('integrity_check') as { integrity_check: string }[]).map((row) => row.integrity_check).join('\n');
  } finally {
    database.close();
  }
}

/**
 * A fresh place and a store opened on it before each test of the calling `describe`, disposed
 * after it. Read them through the getters (they change from test to test).
 *
 * @example const fresh = freshStoreEach(engine); it('…', async () => { await fresh.store.listUserTokens() })
 */
export function freshStoreEach(engine: StoreEngine): { readonly place: StorePlace; readonly store: Store } {
  let place: StorePlace | undefined;
  let store: Store | undefined;
  beforeEach(async () => {
    place = await engine.createPlace();
    store = await place.open();
  });
  afterEach(async () => {
    await place?.dispose();
  });
  return {
    get place() {
      if (!place) throw new Error('no store place outside a test');
      return place;
    },
    get store() {
      if (!store) throw new Error('no store outside a test');
      return store;
    },
  };
}
