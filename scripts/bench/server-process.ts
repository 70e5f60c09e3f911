import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readFile, rm, symlink } from 'node:fs/promises';
import { join } from 'node:path';
import { startServerProcess } from '../lib/server-process.js';
import { httpRequest } from './http-load.js';

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

export interface StartServerOptions {
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
export async function startCutoutServer(options: StartServerOptions): Promise<CutoutServer> {
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
  const server = await startServerProcess({ env, main: join(options.buildDir, 'main.js'), logPath, readyTimeoutMs: 180_000 });
  const stop = async () => void (await server.stop());
  try {
    const exchange = await httpRequest(`${server.origin}/api/v1/auth/token`, { method: 'POST', headers: { token: tokenId } });
    const managedToken = exchange.status === 200 ? (JSON.parse(exchange.body.toString()) as { managed_token?: string }).managed_token : undefined;
    if (!managedToken) throw new Error(`token exchange answered ${exchange.status}: ${exchange.body.toString()}`);
    const readiness = JSON.parse((await httpRequest(`${server.origin}/readyz`)).body.toString()) as { precision?: string; precisionReason?: string };
    return { pid: server.child.pid ?? 0, baseUrl: server.origin, managedToken, tokenId, logPath, stop, precision: readiness.precision, precisionReason: readiness.precisionReason };
  } catch (error) {
    await stop();
    throw error;
  }
}
