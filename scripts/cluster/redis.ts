import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { waitFor } from './shell.js';

/** The cluster's own Redis, in memory only, on a port of its own. */
export interface ClusterRedis {
  port: number;
  urlFrom(host: string): string;
  destroy(): Promise<void>;
}

/** Starts `redis-server` listening on `listen` at `port`, without persistence, logging into `dir`. */
export async function startRedis(dir: string, port: number, listen: string[]): Promise<ClusterRedis> {
  const child: ChildProcess = spawn('redis-server', ['--port', String(port), '--bind', listen.join(' '), '--save', '', '--appendonly', 'no', '--protected-mode', 'no', '--dir', dir], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const log = createWriteStream(join(dir, 'redis.log'));
  child.stdout!.pipe(log);
  child.stderr!.pipe(log);
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const urlFrom = (host: string) => `redis://${host}:${port}`;
  await waitFor('Redis to answer', async () => {
    const client = new Redis(urlFrom('127.0.0.1'), { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    client.on('error', () => {});
    try {
      await client.connect();
      return (await client.ping()) === 'PONG';
    } catch {
      return false;
    } finally {
      client.disconnect();
    }
  }, 15_000);
  return {
    port,
    urlFrom,
    async destroy() {
      child.kill('SIGTERM');
      await exited;
    },
  };
}
