import type { Config } from '../config.js';
import { openPostgresStore } from './postgres-store.js';
import { openSqliteStore } from './sqlite-store.js';
import type { SchemaWatch } from './schema-compatibility.js';
import type { Store } from './store.js';

/**
 * PostgreSQL when DATABASE_URL is set, else SQLite in the data directory. Migrates either, or,
 * on a schema a newer Cutout migrated that this one serves on, tells `watch` and migrates none.
 */
export function openStore(config: Pick<Config, 'databaseUrl' | 'dataDir'>, watch: SchemaWatch = {}): Promise<Store> {
  return config.databaseUrl ? openPostgresStore(config.databaseUrl, watch) : openSqliteStore(config.dataDir, watch);
}
