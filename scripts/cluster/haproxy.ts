import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { createConnection } from 'node:net';
import { join } from 'node:path';
import { run, waitFor } from './shell.js';

/** One replica's line of HAProxy's `show stat`. */
export interface ServerStat {
  /** UP, DOWN, MAINT, or a transition such as "UP 1/2". */
  status: string;
  /** Requests (connections) at the replica now. */
  current: number;
  /** Requests waiting in HAProxy's queue for this replica. */
  queued: number;
}

export interface ClusterHaproxy {
  /** `http://127.0.0.1:<port>`: where the load goes. */
  origin: string;
  logPath: string;
  /** The admin socket (see {@link askSocket}). */
  socketPath: string;
  stats(): Promise<Record<string, ServerStat>>;
  destroy(): Promise<void>;
}

/** Replaces `pattern` in `text`, and fails if it is not there: the cluster must run deploy/haproxy.cfg, not a drifted copy. */
function replaceOnce(text: string, pattern: RegExp, replacement: string): string {
  if (!pattern.test(text)) throw new Error(`deploy/haproxy.cfg has no ${pattern}: update scripts/cluster/haproxy.ts with it`);
  return text.replace(pattern, replacement);
}

/**
 * deploy/haproxy.cfg as the cluster runs it: the same file with its listening ports, its
 * socket and its servers replaced by the cluster's, and one addition, the request id in
 * the log, to tell which requests a fault cost.
 */
export function clusterConfig(template: string, options: { port: number; statsPort: number; socket: string; servers: { name: string; address: string }[] }): string {
  let config = template;
  config = replaceOnce(config, /stats socket \S+/, `stats socket ${options.socket}`);
  config = replaceOnce(config, /^(\s*)bind :8080$/m, `$1bind 127.0.0.1:${options.port}`);
  config = replaceOnce(config, /^(\s*)bind 127\.0\.0\.1:8404$/m, `$1bind 127.0.0.1:${options.statsPort}`);
  config = replaceOnce(config, /^(\s*)server r1 .*\n\s*server r2 .*\n\s*server r3 .*$/m, options.servers.map((s) => `    server ${s.name} ${s.address}`).join('\n'));
  config = replaceOnce(config, /^(\s*)default_backend cutout$/m, '$1capture request header x-request-id len 64\n$1default_backend cutout');
  return config;
}

/** Asks HAProxy's admin socket one command and returns its whole answer. */
export function askSocket(socket: string, command: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const connection = createConnection(socket);
    let answer = '';
    connection.on('data', (chunk) => (answer += chunk));
    connection.on('end', () => resolve(answer));
    connection.on('error', reject);
    connection.end(`${command}\n`);
  });
}

/** Starts HAProxy in the foreground with the cluster's rendering of deploy/haproxy.cfg. */
export async function startHaproxy(root: string, dir: string, options: { port: number; statsPort: number; servers: { name: string; address: string }[] }): Promise<ClusterHaproxy> {
  const socket = join(dir, 'haproxy.sock');
  const configPath = join(dir, 'haproxy.cfg');
  await writeFile(configPath, clusterConfig(await readFile(join(root, 'deploy/haproxy.cfg'), 'utf8'), { ...options, socket }));
  await run('haproxy', ['-c', '-f', configPath]);
  const logPath = join(dir, 'haproxy.log');
  const child: ChildProcess = spawn('haproxy', ['-db', '-f', configPath], { stdio: ['ignore', 'pipe', 'pipe'] });
  const log = createWriteStream(logPath);
  child.stdout!.pipe(log);
  child.stderr!.pipe(log);
  const exited = new Promise((resolve) => child.once('exit', resolve));
  await waitFor('HAProxy\'s admin socket', () => askSocket(socket, 'show info').then(() => true, () => false), 15_000);
  return {
    origin: `http://127.0.0.1:${options.port}`,
    logPath,
    socketPath: socket,
    async stats() {
      const csv = await askSocket(socket, 'show stat');
      const [header, ...lines] = csv.replace(/^# /, '').trim().split('\n');
      const columns = header.split(',');
      const at = (name: string) => columns.indexOf(name);
      const result: Record<string, ServerStat> = {};
      for (const line of lines) {
        const cells = line.split(',');
        if (cells[at('pxname')] !== 'cutout' || ['FRONTEND', 'BACKEND'].includes(cells[at('svname')])) continue;
        result[cells[at('svname')]] = { status: cells[at('status')], current: Number(cells[at('scur')]), queued: Number(cells[at('qcur')]) };
      }
      return result;
    },
    async destroy() {
      child.kill('SIGTERM');
      await exited;
    },
  };
}
