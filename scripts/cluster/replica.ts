import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, type WriteStream } from 'node:fs';
import { join } from 'node:path';
import type { ReplicaAddress } from './network.js';
import { request } from './http.js';
import { waitFor } from './shell.js';

/** How a replica's process ended. */
export interface ReplicaExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/**
 * One Cutout replica of the cluster: `node <build>/main.js` in its network namespace, with
 * the variables `npm start` sets, its log appended to `<dir>/<name>.log` across restarts.
 */
export class Replica {
  readonly address: ReplicaAddress;
  readonly logPath: string;
  #child: ChildProcess | undefined;
  #exited: Promise<ReplicaExit> | undefined;
  #log: WriteStream;
  readonly #command: string[];
  readonly #env: NodeJS.ProcessEnv;
  /** Every start, with its pid. */
  readonly starts: { pid: number; at: number }[] = [];

  constructor(address: ReplicaAddress, options: { dir: string; main: string; env: Record<string, string> }) {
    this.address = address;
    this.logPath = join(options.dir, `${address.name}.log`);
    this.#log = createWriteStream(this.logPath, { flags: 'a' });
    this.#command = address.wrap([process.execPath, options.main]);
    this.#env = { PATH: process.env.PATH, HOME: process.env.HOME, ...options.env, HOST: address.host, PORT: String(address.port) };
  }

  get name(): string {
    return this.address.name;
  }

  get origin(): string {
    return `http://${this.address.host}:${this.address.port}`;
  }

  get pid(): number | undefined {
    return this.#child?.pid;
  }

  get running(): boolean {
    return this.#child !== undefined && this.#child.exitCode === null && this.#child.signalCode === null;
  }

  /** Starts the process (does not wait for it to be ready). */
  spawn(): void {
    if (this.running) throw new Error(`${this.name} is already running`);
    const [command, ...args] = this.#command;
    const child = spawn(command, args, { env: this.#env, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout!.pipe(this.#log, { end: false });
    child.stderr!.pipe(this.#log, { end: false });
    this.#child = child;
    this.#exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
    this.starts.push({ pid: child.pid!, at: performance.now() });
  }

  /** Resolves once `GET /readyz` answers 200 (model loaded); rejects if the process exits first. */
  async ready(timeoutMs = 180_000): Promise<void> {
    const exited = this.#exited!;
    let gone: ReplicaExit | undefined;
    void exited.then((exit) => (gone = exit));
    await waitFor(`${this.name} to be ready`, async () => {
      if (gone) throw new Error(`${this.name} exited (${JSON.stringify(gone)}) before it was ready; see ${this.logPath}`);
      return (await request(this.origin, 'GET', '/readyz').catch(() => undefined))?.status === 200;
    }, timeoutMs, 200);
  }

  async start(): Promise<void> {
    this.spawn();
    await this.ready();
  }

  /** Sends `signal` without waiting. */
  signal(signal: NodeJS.Signals): void {
    this.#child!.kill(signal);
  }

  /** Resolves when the current process has ended. */
  exited(): Promise<ReplicaExit> {
    return this.#exited!;
  }

  /** Sends `signal` and waits for the process to end. */
  async stop(signal: NodeJS.Signals): Promise<ReplicaExit> {
    this.signal(signal);
    return this.exited();
  }

  /** Ends it at once if it still runs (clean-up). */
  async destroy(): Promise<void> {
    if (this.running) await this.stop('SIGKILL');
  }
}
