import { readFile } from 'node:fs/promises';
import { Redis } from 'ioredis';
import pg from 'pg';

/** What PostgreSQL and Redis had done at one moment: to divide by the requests between two of them. */
export interface BackendCounters {
  /** Commands Redis has run (INFO commandstats, every command summed). */
  redisCommands: number;
  /** The same, by command. */
  redisByCommand: Record<string, number>;
  /** Transactions committed in the cluster's database (each statement outside a transaction is one). */
  postgresTransactions: number;
  /** Connections open to the cluster's database now, by client address. */
  postgresConnections: Record<string, number>;
}

/** Reads {@link BackendCounters} from the cluster's Redis and PostgreSQL. */
export async function readBackendCounters(redisUrl: string, postgresUrl: string): Promise<BackendCounters> {
  const redis = new Redis(redisUrl, { lazyConnect: true });
  await redis.connect();
  const stats = await redis.info('commandstats');
  redis.disconnect();
  const redisByCommand = Object.fromEntries([...stats.matchAll(/^cmdstat_([\w|]+):calls=(\d+)/gm)].map((m) => [m[1], Number(m[2])]));
  const redisCommands = Object.values(redisByCommand).reduce((sum, calls) => sum + calls, 0);
  const client = new pg.Client({ connectionString: postgresUrl });
  await client.connect();
  try {
    const { rows } = await client.query<{ xact_commit: string }>('select xact_commit from pg_stat_database where datname = current_database()');
    const connections = await client.query<{ client: string; n: string }>(
      "select coalesce(host(client_addr), 'local') as client, count(*) as n from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid() group by 1",
    );
    return {
      redisCommands,
      redisByCommand,
      postgresTransactions: Number(rows[0].xact_commit),
      postgresConnections: Object.fromEntries(connections.rows.map((row) => [row.client, Number(row.n)])),
    };
  } finally {
    await client.end();
  }
}

/** A process's resident memory now and at its peak (VmRSS, VmHWM), in MiB; undefined when it is gone. */
export async function processMemory(pid: number): Promise<{ rssMiB: number; peakMiB: number } | undefined> {
  try {
    const status = await readFile(`/proc/${pid}/status`, 'utf8');
    const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
    return { rssMiB: Math.round(kib('VmRSS') / 1024), peakMiB: Math.round(kib('VmHWM') / 1024) };
  } catch {
    return undefined;
  }
}
