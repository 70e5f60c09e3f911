import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, existsSync } from 'node:fs';
import { mkdir, readFile, rm, symlink } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

/**
 * Starts Cutout as a real child process and watches it: the one launcher of the tests that
 * signal or kill a server (shutdown, durability) and of the scripts that measure one (bench,
 * load test, memory probe), which start it compiled and with a token ready
 * ({@link startCutoutServer}).
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** One pino line of the server's stdout. */
export interface LogLine {
  level: number;
  msg: string;
  reqId?: string;
  [field: string]: unknown;
}

/** How the child ended; seen once it exited and its output was read to the end. */
export interface ExitStatus {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** performance.now() in this process when the child was seen to exit. */
  at: number;
  /** Date.now() at the same moment, to compare with the `time` of the child's log lines. */
  wallAt: number;
}

export interface ServerProcess {
  child: ChildProcess;
  /** `http://127.0.0.1:<port>` */
  origin: string;
  port: number;
  /** Every JSON log line so far, in order. */
  logs: LogLine[];
  /** Everything the child wrote (stdout and stderr), for failure messages. */
  output(): string;
  /** Settles once the child has exited and every line it wrote is in `logs`. */
  exited: Promise<ExitStatus>;
  /** Resolves with the first log line (past or future) that matches. */
  waitForLog(match: (line: LogLine) => boolean, timeoutMs?: number): Promise<LogLine>;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves once the process has exited. */
  stop(graceMs?: number): Promise<ExitStatus>;
}

export interface StartServerOptions {
  /** The whole environment of the child; PORT and HOST are set here. */
  env: NodeJS.ProcessEnv;
  /** A compiled `main.js` to run with node; default: `src/main.ts` through tsx. */
  main?: string;
  /** Also write everything the child prints to this file. */
  logPath?: string;
  /** How long `/readyz` may take to answer 200 (default 90 s). */
  readyTimeoutMs?: number;
}

/** The env of a child: this process's, minus anything that would point it at another store or model. */
export function childEnv(overrides: Record<string, string>): NodeJS.ProcessEnv {
  const inherited = Object.entries(process.env).filter(([name]) => name !== 'DATABASE_URL' && name !== 'REDIS_URL' && name !== 'PORT' && name !== 'HOST' && name !== 'LOG_LEVEL' && !name.startsWith('CUTOUT_'));
  return { ...Object.fromEntries(inherited), ...overrides };
}

const running = new Set<ChildProcess>();

/** Runs a TypeScript file of this repository with tsx, from the repository's root. */
export function spawnTs(file: string, args: string[], env: NodeJS.ProcessEnv): ChildProcess {
  return track(spawn(process.execPath, ['--import', 'tsx', file, ...args], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] }));
}

/** SIGKILLs the children started here that are still running (a test that failed half-way leaves some); use in afterEach. */
export async function killLeftoverChildren(): Promise<void> {
  await Promise.all(
    [...running].map((child) => {
      if (child.exitCode !== null || child.signalCode !== null) return undefined;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      return exited;
    }),
  );
}

/**
 * Starts the server on a free loopback port and resolves once `GET /readyz` answers 200;
 * kills it and rejects with what it wrote if it exits or is not ready in time.
 *
 * @example const server = await startServerProcess({ env: childEnv({ CUTOUT_DATA_DIR: dir }) })
 */
export async function startServerProcess(options: StartServerOptions): Promise<ServerProcess> {
  const port = await freePort();
  const env = { ...options.env, PORT: String(port), HOST: '127.0.0.1' };
  const child = options.main
    ? track(spawn(process.execPath, [options.main], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] }))
    : spawnTs('src/main.ts', [], env);
  const readyTimeoutMs = options.readyTimeoutMs ?? 90_000;
  const logs: LogLine[] = [];
  const waiters = new Set<{ match: (line: LogLine) => boolean; resolve: (line: LogLine) => void }>();
  let output = '';

  if (options.logPath) {
    const file = createWriteStream(options.logPath);
    child.stdout!.pipe(file);
    child.stderr!.pipe(file);
  }
  const exited = new Promise<ExitStatus>((resolve) => child.once('close', (code, signal) => resolve({ code, signal, at: performance.now(), wallAt: Date.now() })));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  createInterface({ input: child.stdout! }).on('line', (text) => {
    output += `${text}\n`;
    let line: LogLine;
    try {
      line = JSON.parse(text) as LogLine;
    } catch {
      return;
    }
    logs.push(line);
    for (const waiter of waiters) {
      if (waiter.match(line)) {
        waiters.delete(waiter);
        waiter.resolve(line);
      }
    }
  });

  const waitForLog = (match: (line: LogLine) => boolean, wait = readyTimeoutMs) => {
    const seen = logs.find(match);
    if (seen) return Promise.resolve(seen);
    return new Promise<LogLine>((resolve, reject) => {
      const waiter = { match, resolve: (line: LogLine) => (clearTimeout(timer), resolve(line)) };
      const timer = setTimeout(() => {
        waiters.delete(waiter);
        reject(new Error(`no matching log line within ${wait} ms; the server wrote:\n${output}`));
      }, wait);
      waiters.add(waiter);
      void exited.then(() => {
        // Lines are parsed before 'close' is seen in practice, but give readline a turn.
        setTimeout(() => {
          if (!waiters.delete(waiter)) return;
          clearTimeout(timer);
          reject(new Error(`the server exited before the expected log line; it wrote:\n${output}`));
        }, 50);
      });
    });
  };

  const stop = async (graceMs = 15_000) => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      void exited.then(() => clearTimeout(timer));
    }
    return exited;
  };

  const origin = `http://127.0.0.1:${port}`;
  try {
    const deadline = performance.now() + readyTimeoutMs;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`the server exited with code ${child.exitCode} while starting; it wrote:\n${output}`);
      const ready = await fetch(`${origin}/readyz`, { signal: AbortSignal.timeout(5_000) }).catch(() => undefined);
      await ready?.arrayBuffer();
      if (ready?.status === 200) break;
      if (performance.now() > deadline) throw new Error(`/readyz did not answer 200 within ${readyTimeoutMs} ms; the server wrote:\n${output}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    return { child, origin, port, logs, output: () => output, exited, waitForLog, stop };
  } catch (error) {
    child.kill('SIGKILL');
    throw error;
  }
}

/** A Cutout server the benchmark started as a child process, with a managed token ready. */
export interface CutoutServer {
  pid: number;
  baseUrl: string;
  managedToken: string;
  /** The user token the managed one was exchanged from (for the CLI and remove.bg's wire). */
  tokenId: string;
  /** The child's stdout and stderr (pino's JSON log). */
  logPath: string;
  /** SIGTERM, then SIGKILL after 15 s; resolves when the process has exited. */
  stop(): Promise<void>;
  /** What /readyz said runs (`int8` or `fp32`) and why. */
  precision?: string;
  precisionReason?: string;
}

export interface CutoutServerOptions {
  /** The repository root (where package.json is). */
  root: string;
  /** The compiled server from {@link compileServer}. */
  buildDir: string;
  /** A fresh data directory for this run (database, models symlink). */
  dataDir: string;
  /** The directory holding the assembled model, linked as `<dataDir>/models`. */
  modelsDir: string;
  threads: number;
  /** More environment for the server (e.g. CUTOUT_MODEL_PRECISION). */
  env?: Record<string, string>;
}

function run(command: string, args: string[], options: { cwd: string; env?: NodeJS.ProcessEnv }): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: options.cwd, env: options.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? 1, stdout, stderr }));
  });
}

/** The server's entry in a build: `start.cjs` (which sizes libuv's pool), or `main.js` in a build of a checkout from before it. */
export function serverEntry(buildDir: string): string {
  const start = join(buildDir, 'start.cjs');
  return existsSync(start) ? start : join(buildDir, 'main.js');
}

/**
 * Compiles src/ with the project's tsconfig into `buildDir` (inside the repository, so
 * node_modules resolves), leaving dist/ to its owners, and the dashboard's browser script with
 * its own tsconfig beside it, as `npm run build` does. tsc emits even when it reports type
 * errors, which can happen while someone else edits src/; those are returned as a warning.
 */
export async function compileServer(root: string, buildDir: string): Promise<{ warning?: string }> {
  await rm(buildDir, { recursive: true, force: true });
  const tsc = join(root, 'node_modules/typescript/bin/tsc');
  const projects = [join(root, 'tsconfig.json'), join(root, 'src/dashboard/assets/browser/tsconfig.json')];
  const warnings: string[] = [];
  // A checkout from before the browser script had its own tsconfig (bench:options --before) has only the first.
  for (const project of projects.filter((file) => existsSync(file))) {
    const { code, stdout, stderr } = await run(process.execPath, [tsc, '-p', project, '--outDir', buildDir], { cwd: root });
    if (code !== 0) warnings.push(`tsc -p ${project} exited with ${code} (type errors, emitted anyway):\n${(stdout + stderr).trim().split('\n').slice(0, 5).join('\n')}`);
  }
  if (!existsSync(join(buildDir, 'main.js'))) throw new Error(`tsc produced no ${buildDir}/main.js:\n${warnings.join('\n')}`);
  return warnings.length === 0 ? {} : { warning: warnings.join('\n') };
}

/**
 * The variables `npm start` sets before `node` (package.json's start script begins with
 * `cross-env NAME=value …`): glibc's malloc settings, which must be in place when the process starts,
 * so the measured server runs as the shipped one does.
 */
export async function startScriptEnvironment(root: string): Promise<Record<string, string>> {
  const { scripts } = JSON.parse(await readFile(join(root, 'package.json'), 'utf8')) as { scripts?: { start?: string } };
  const assignments = /^(?:cross-env\s+)?((?:\w+=\S*\s+)*)node\b/.exec(scripts?.start ?? '')?.[1] ?? '';
  return Object.fromEntries(assignments.trim().split(/\s+/).filter(Boolean).map((pair) => pair.split('=', 2) as [string, string]));
}

/**
 * Starts `node <buildDir>/main.js` (with scripts/lib/server-process.ts) on a free loopback
 * port with its own data directory (the already assembled model linked in), SQLite, no rate
 * limit and otherwise default settings; creates a user token with the CLI, waits for
 * `GET /readyz` to answer 200 and exchanges the token for a managed one.
 */
export async function startCutoutServer(options: CutoutServerOptions): Promise<CutoutServer> {
  await mkdir(options.dataDir, { recursive: true });
  await symlink(options.modelsDir, join(options.dataDir, 'models'), 'dir');
  const env = {
    ...process.env,
    ...(await startScriptEnvironment(options.root)),
    CUTOUT_DATA_DIR: options.dataDir,
    CUTOUT_INFERENCE_THREADS: String(options.threads),
    DATABASE_URL: '',
    REDIS_URL: '',
    CUTOUT_MODEL_PATH: '',
    // One token sends every request of the run; the per-token limit (60/min by default) would
    // measure the limiter, not the pipeline.
    CUTOUT_RATE_LIMIT: '0',
    ...options.env,
  };

  const created = await run(process.execPath, [join(options.buildDir, 'cli/main.js'), 'tokens', 'create', '--name', 'bench'], { cwd: options.root, env });
  const tokenId = created.stdout.trim().split('\n').at(-1) ?? '';
  if (created.code !== 0 || !tokenId.startsWith('cut_user_')) throw new Error(`cutout tokens create failed (${created.code}):\n${created.stdout}${created.stderr}`);

  const logPath = join(options.dataDir, 'server.log');
  const server = await startServerProcess({ env, main: serverEntry(options.buildDir), logPath, readyTimeoutMs: 180_000 });
  const stop = async () => void (await server.stop());
  try {
    const exchange = await fetch(`${server.origin}/api/v1/auth/token`, { method: 'POST', headers: { token: tokenId } });
    const exchanged = await exchange.text();
    const managedToken = exchange.status === 200 ? (JSON.parse(exchanged) as { managed_token?: string }).managed_token : undefined;
    if (!managedToken) throw new Error(`token exchange answered ${exchange.status}: ${exchanged}`);
    const readiness = (await (await fetch(`${server.origin}/readyz`)).json()) as { precision?: string; precisionReason?: string };
    return { pid: server.child.pid ?? 0, baseUrl: server.origin, managedToken, tokenId, logPath, stop, precision: readiness.precision, precisionReason: readiness.precisionReason };
  } catch (error) {
    await stop();
    throw error;
  }
}

function track(child: ChildProcess): ChildProcess {
  running.add(child);
  child.once('exit', () => running.delete(child));
  return child;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}
