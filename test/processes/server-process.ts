import { spawn, type ChildProcess } from 'node:child_process';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { assembleModel } from '../../src/model/assemble-model.js';

/**
 * Starts `src/main.ts` as a real child process and watches it: the tests that send it
 * signals (shutdown) or kill it (durability) share this. Not a test itself, and not run as
 * a child: it is the parent's side of one.
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
}

/** The env of a child: this process's, minus anything that would point it at another store or model. */
export function childEnv(overrides: Record<string, string>): NodeJS.ProcessEnv {
  const inherited = Object.entries(process.env).filter(([name]) => name !== 'DATABASE_URL' && name !== 'PORT' && name !== 'HOST' && name !== 'LOG_LEVEL' && !name.startsWith('CUTOUT_'));
  return { ...Object.fromEntries(inherited), ...overrides };
}

/** The real model, assembled once into the same place test/helpers/app.ts uses, so children never assemble it. */
export function testModelPath(): Promise<string> {
  return assembleModel(join(tmpdir(), 'cutout-test-model'));
}

const running = new Set<ChildProcess>();

/** Runs a TypeScript file of this repository with tsx, from the repository's root. */
export function spawnTs(file: string, args: string[], env: NodeJS.ProcessEnv): ChildProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', file, ...args], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  running.add(child);
  child.once('exit', () => running.delete(child));
  return child;
}

/** SIGKILLs the children spawned here that are still running (a test that failed half-way leaves some); use in afterEach. */
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
 * Starts the server on a random port with the real model and one inference thread, and
 * resolves once `GET /readyz` answers 200. `env` adds to or overrides that (CUTOUT_DATA_DIR
 * is required).
 */
export async function startServer(env: Record<string, string>, timeoutMs = 90_000): Promise<ServerProcess> {
  const child = spawnTs('src/main.ts', [], childEnv({ PORT: '0', HOST: '127.0.0.1', CUTOUT_INFERENCE_THREADS: '1', LOG_LEVEL: 'info', CUTOUT_MODEL_PATH: await testModelPath(), ...env }));
  const logs: LogLine[] = [];
  const waiters = new Set<{ match: (line: LogLine) => boolean; resolve: (line: LogLine) => void }>();
  let output = '';

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

  const waitForLog = (match: (line: LogLine) => boolean, wait = timeoutMs) => {
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
        // Lines are parsed before 'exit' is seen in practice, but give readline a turn.
        setTimeout(() => {
          if (!waiters.delete(waiter)) return;
          clearTimeout(timer);
          reject(new Error(`the server exited before the expected log line; it wrote:\n${output}`));
        }, 50);
      });
    });
  };

  try {
    const listening = await waitForLog((line) => line.msg.startsWith('Server listening at http://127.0.0.1:'));
    const port = Number(/:(\d+)$/.exec(listening.msg)?.[1]);
    const origin = `http://127.0.0.1:${port}`;
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      const ready = await send(origin, 'GET', '/readyz').catch(() => undefined);
      if (ready?.status === 200) break;
      if (performance.now() > deadline) throw new Error(`/readyz did not answer 200 within ${timeoutMs} ms; the server wrote:\n${output}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    return { child, origin, port, logs, output: () => output, exited, waitForLog };
  } catch (error) {
    child.kill('SIGKILL');
    throw error;
  }
}

export interface HttpAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
  /** performance.now() when the whole answer had arrived. */
  at: number;
}

/**
 * One HTTP request on a connection of its own (no keep-alive agent), so that "a new
 * connection" in a test means a new TCP connection. Rejects with the socket error
 * (`ECONNREFUSED`, `ECONNRESET`, …) when there is no answer.
 */
export function send(
  origin: string,
  method: string,
  path: string,
  options: { headers?: Record<string, string>; body?: string | Buffer; /** Aborting it closes the connection, as a client that gives up does. */ signal?: AbortSignal } = {},
): Promise<HttpAnswer> {
  return new Promise((resolve, reject) => {
    const req = request(`${origin}${path}`, { method, headers: options.headers, agent: false, signal: options.signal }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks), at: performance.now() }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(options.body);
  });
}

/** Exchanges a Token ID for a managed token over HTTP. */
export async function exchangeOverHttp(origin: string, tokenId: string): Promise<string> {
  const answer = await send(origin, 'POST', '/api/v1/auth/token', { headers: { token: tokenId } });
  if (answer.status !== 200) throw new Error(`exchange answered ${answer.status}: ${answer.body.toString()}`);
  return (JSON.parse(answer.body.toString()) as { managed_token: string }).managed_token;
}

/** POST /api/v1/background/remove/base64 with `image`. */
export function removeBackgroundOverHttp(origin: string, managedToken: string, image: Buffer, requestId?: string): Promise<HttpAnswer> {
  return send(origin, 'POST', '/api/v1/background/remove/base64', {
    headers: { authorization: managedToken, 'content-type': 'application/json', ...(requestId ? { 'x-request-id': requestId } : {}) },
    body: JSON.stringify({ image_base64: image.toString('base64') }),
  });
}
