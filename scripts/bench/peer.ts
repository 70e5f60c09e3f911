import { fork, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { BenchImage } from './inputs.js';
import type { RequestSample } from './http-load.js';

interface DoneMessage {
  type: 'done';
  id: number;
  ok: boolean;
  ms: number;
  bytes: number;
  width?: number;
  height?: number;
  channels?: number;
  format?: string;
  error?: string;
}

type WorkerMessage = { type: 'ready'; versions: Record<string, string> } | { type: 'loaded'; key: string } | DoneMessage;

/** One peer call: the sample as the load generator sees it, and the library's own timing. */

/**
 * Where the bench keeps the environment it was started with, when it runs itself again under
 * the server's malloc settings: the peer gets that one, as its users would run it.
 */
export const PEER_ENV = 'CUTOUT_BENCH_PEER_ENV';
export interface PeerSample extends RequestSample {
  /** Time inside the worker, from the call to the returned Blob. */
  libraryMs: number;
  output?: { width?: number; height?: number; channels?: number; format?: string; bytes: number };
}

/**
 * `@imgly/background-removal-node` running in its own process (bench/peer/worker.mjs, with
 * the peer's own node_modules: onnxruntime-node 1.17, sharp 0.34). Images are loaded into the
 * worker once; each {@link PeerWorker.remove} is one `removeBackground` call there, and calls
 * may overlap.
 */
export class PeerWorker {
  readonly #child: ChildProcess;
  readonly #pending = new Map<string | number, { resolve: (message: WorkerMessage) => void; reject: (error: Error) => void }>();
  #nextId = 1;
  readonly versions: Record<string, string>;

  private constructor(child: ChildProcess, versions: Record<string, string>) {
    this.#child = child;
    this.versions = versions;
    child.on('message', (message: WorkerMessage) => {
      const key = message.type === 'done' ? message.id : message.type === 'loaded' ? `load:${message.key}` : undefined;
      if (key === undefined) return;
      this.#pending.get(key)?.resolve(message);
      this.#pending.delete(key);
    });
    child.on('exit', (code, signal) => {
      for (const { reject } of this.#pending.values()) reject(new Error(`the peer worker exited (${code ?? signal}) with calls in flight`));
      this.#pending.clear();
    });
  }

  /** Starts the worker; fails with the install command when the peer is not installed. */
  static async start(peerDir: string): Promise<PeerWorker> {
    if (!existsSync(join(peerDir, 'node_modules/@imgly/background-removal-node'))) {
      throw new Error(`the peer is not installed: (cd ${peerDir} && npm install --ignore-scripts), or run with --skip-peer`);
    }
    const child = fork(join(peerDir, 'worker.mjs'), [], {
      cwd: peerDir,
      env: process.env[PEER_ENV] ? (JSON.parse(process.env[PEER_ENV]) as NodeJS.ProcessEnv) : process.env,
      // Plain node, not the bench's tsx loader: the peer runs as its users run it.
      execArgv: [],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    const versions = await new Promise<Record<string, string>>((resolve, reject) => {
      child.once('message', (message: WorkerMessage) => (message.type === 'ready' ? resolve(message.versions) : reject(new Error('unexpected first message from the peer'))));
      child.once('exit', (code) => reject(new Error(`the peer worker exited with ${code} while starting`)));
    });
    child.removeAllListeners('exit');
    return new PeerWorker(child, versions);
  }

  get pid(): number {
    return this.#child.pid ?? 0;
  }

  #ask<T extends WorkerMessage>(key: string | number, message: object): Promise<T> {
    if (!this.#child.connected) return Promise.reject(new Error('the peer worker is not running'));
    return new Promise((resolve, reject) => {
      this.#pending.set(key, { resolve: (reply) => resolve(reply as T), reject });
      this.#child.send(message);
    });
  }

  /** Makes an image's bytes available to the worker (read there once, from its file). */
  async load(image: BenchImage): Promise<void> {
    await this.#ask(`load:${image.label}`, { type: 'load', key: image.label, path: image.path, mime: image.mime });
  }

  /** One `removeBackground` call on a loaded image; `inspect` also reads the result's PNG header. */
  async remove(image: BenchImage, inspect = false): Promise<PeerSample> {
    const id = this.#nextId++;
    const startedAt = performance.now();
    const done = await this.#ask<DoneMessage>(id, { type: 'remove', id, key: image.label, inspect }).catch(
      (error: Error): DoneMessage => ({ type: 'done', id, ok: false, ms: Number.NaN, bytes: 0, error: error.message }),
    );
    const endedAt = performance.now();
    return {
      ok: done.ok,
      ms: endedAt - startedAt,
      startedAt,
      endedAt,
      status: 0,
      error: done.error,
      libraryMs: done.ms,
      output: { width: done.width, height: done.height, channels: done.channels, format: done.format, bytes: done.bytes },
    };
  }

  async stop(): Promise<void> {
    if (this.#child.exitCode !== null) return;
    const exited = new Promise((resolve) => this.#child.once('exit', resolve));
    this.#child.send({ type: 'exit' });
    await exited;
  }
}
