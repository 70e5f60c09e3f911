import type { Config } from '../config.js';
import { openPostgresStore } from './postgres-store.js';
import { openSqliteStore } from './sqlite-store.js';
import type { Store } from './store.js';

/** PostgreSQL when DATABASE_URL is set, else SQLite in the data directory. Migrates either. */
export function openStore(config: Pick<Config, 'databaseUrl' | 'dataDir'>): Promise<Store> {
  return config.databaseUrl ? openPostgresStore(config.databaseUrl) : openSqliteStore(config.dataDir);
}
