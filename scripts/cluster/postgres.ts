import { existsSync, readdirSync } from 'node:fs';
import { appendFile, chmod, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import pg from 'pg';
import { run, waitFor } from './shell.js';

/** The cluster's own PostgreSQL: a fresh data directory, a port of its own. */
export interface ClusterPostgres {
  port: number;
  /** The URL of the cluster's database as seen from `host`. */
  urlFrom(host: string): string;
  /** `pg_ctl stop -m fast`: open connections are terminated, new ones refused. */
  stop(): Promise<void>;
  start(): Promise<void>;
  /** Stops it for good (immediate). */
  destroy(): Promise<void>;
}

/** initdb and pg_ctl: on PATH, or in Debian's /usr/lib/postgresql/<version>/bin (the newest). */
function binary(name: string): string {
  for (const dir of (process.env.PATH ?? '').split(':')) if (existsSync(join(dir, name))) return join(dir, name);
  const versions = existsSync('/usr/lib/postgresql') ? readdirSync('/usr/lib/postgresql').sort((a, b) => Number(b) - Number(a)) : [];
  for (const version of versions) {
    const path = join('/usr/lib/postgresql', version, 'bin', name);
    if (existsSync(path)) return path;
  }
  throw new Error(`${name} not found (install PostgreSQL's server package)`);
}

/**
 * Creates a database cluster in `dir` (initdb; as the `postgres` user when this runs as
 * root, which PostgreSQL refuses to run as), listening on `listen` at `port` with trust
 * authentication for connections from `clients` (CIDRs) only, and starts it with a database `cutout`. Nothing
 * here touches another PostgreSQL on the machine.
 */
export async function startPostgres(dir: string, port: number, listen: string[], clients: string[]): Promise<ClusterPostgres> {
  const asOwner = (command: string, args: string[]) => (process.getuid?.() === 0 ? run('runuser', ['-u', 'postgres', '--', command, ...args]) : run(command, args));
  await mkdir(dir, { recursive: true });
  if (process.getuid?.() === 0) {
    await run('chown', ['postgres:postgres', dir]);
    // initdb runs as postgres, which must be able to reach the directory.
    await chmod(join(dir, '..'), 0o755);
  }
  await asOwner(binary('initdb'), ['-D', dir, '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--no-sync']);
  await appendFile(join(dir, 'pg_hba.conf'), clients.map((network) => `host all all ${network} trust\n`).join(''));
  const options = `-p ${port} -c listen_addresses='${listen.join(',')}' -c unix_socket_directories='${dir}'`;
  const start = () => asOwner(binary('pg_ctl'), ['-D', dir, '-l', join(dir, 'server.log'), '-o', options, '-w', '-t', '60', 'start']).then(() => undefined);
  const stop = (mode: string) => asOwner(binary('pg_ctl'), ['-D', dir, '-m', mode, '-w', '-t', '60', 'stop']).then(() => undefined);
  await start();
  const urlFrom = (host: string) => `postgres://postgres@${host}:${port}/cutout`;
  const admin = new pg.Client({ connectionString: `postgres://postgres@127.0.0.1:${port}/postgres` });
  await admin.connect();
  await admin.query('create database cutout');
  await admin.end();
  return {
    port,
    urlFrom,
    stop: () => stop('fast'),
    async start() {
      await start();
      await waitFor('PostgreSQL to accept connections', async () => {
        const client = new pg.Client({ connectionString: urlFrom('127.0.0.1') });
        try {
          await client.connect();
          await client.end();
          return true;
        } catch {
          return false;
        }
      }, 30_000);
    },
    destroy: () => stop('immediate').catch(() => undefined),
  };
}
