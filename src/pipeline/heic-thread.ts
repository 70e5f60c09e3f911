import { availableParallelism } from 'node:os';
import type { Worker } from 'node:worker_threads';
import { CutoutError } from '../errors.js';
import { besideThisModule, startWorkerThread } from '../threads/start-worker-thread.js';
import { threadDefaults } from '../threads/thread-defaults.cjs';
import { fromThreadError } from '../threads/thread-error.js';
import { heifHeader } from './decode.js';
import type { HeicRequest, HeicResult } from './heic-protocol.js';
import { heifExifOrientation } from './heif-orientation.js';
import { LARGE_PHOTO_PIXELS, type PhotoInput } from './photo-input.js';
import { isHeif } from './sniff-format.js';

/** How the HEIC threads are shared out; every field has a default. */
export interface HeicThreadOptions {
  /** Photos decoded at once, each on a thread of its own. Default: half the cores, at least 2 (`thread-defaults.ts`). */
  threads?: number;
  /**
   * A photo over this many pixels is large: large photos are decoded at most `threads − 1` at
   * a time (one when `threads` is 1), so that a thread is always left for the small ones.
   * Default 16 megapixels, above the 12 of most phones.
   */
  largePixels?: number;
  /**
   * A thread whose decoder holds more WebAssembly memory than this after an image is ended
   * instead of kept: that memory only grows. Default 128 MiB, which keeps the thread of a
   * 12-megapixel photo (docs/internals/memory.md has what each size leaves).
   */
  keepDecoderBytes?: number;
  /** A thread with nothing to decode for this long is ended. Default 10 s. */
  idleMs?: number;
}

interface Job {
  request: Omit<HeicRequest, 'id'>;
  large: boolean;
  signal?: AbortSignal;
  resolve: (pixels: PhotoInput) => void;
  reject: (error: Error) => void;
}

interface HeicWorker {
  worker: Worker;
  /** Ends the thread once it has been idle for `idleMs`. */
  idleTimer?: NodeJS.Timeout;
}

/**
 * The client of the HEIC threads (`heic-worker.ts`): HEIC/HEIF photos, which sharp's prebuilt
 * libvips does not decode (it reads AVIF, not HEVC), become RGBA pixels in memory shared
 * between threads before the pipeline sees them (`photo-input.ts`), so that the model's
 * decode and the finish thread read one copy. A few photos are decoded at once, each on a
 * thread of its own, and a large photo never takes the last free thread, so a small photo
 * waits for at most the small ones before it, not for a large one's seconds of decoding.
 * The decoder's WebAssembly memory grows to the largest image it decoded and is never given
 * back, so a thread is ended once it holds too much, and any thread once it has been idle:
 * after a burst the process returns to the memory it had. A large photo is decoded at the
 * lowest priority (`thread-priority.ts`), so that its seconds of decoding give way to the
 * model's threads; its thread cannot be raised again, and is ended after it. Threads start on demand, are
 * unref'd while idle, and one that crashed fails the photo it held. One per process, owned by
 * the removal service's maker, which closes it.
 *
 * @example const photo = await heic.readable(upload, 50e6) // an HEIC's pixels, else the upload itself
 */
export class HeicThread {
  readonly #threads: number;
  readonly #largePixels: number;
  readonly #keepDecoderBytes: number;
  readonly #idleMs: number;
  #waiting: Job[] = [];
  #idle: HeicWorker[] = [];
  #running = 0;
  #runningLarge = 0;
  /** Threads being started. */
  #starting = 0;
  /** A thread started ahead for the small photos while a large one takes the last idle one. */
  #spare: Promise<HeicWorker> | undefined;
  #nextId = 0;
  #closed = false;
  /** Every thread started and not yet ended, to end them all on close. */
  readonly #workers = new Set<Worker>();

  constructor(options: HeicThreadOptions = {}) {
    this.#threads = Math.max(1, options.threads ?? threadDefaults(availableParallelism()).heicThreads);
    this.#largePixels = options.largePixels ?? LARGE_PHOTO_PIXELS;
    this.#keepDecoderBytes = options.keepDecoderBytes ?? 128 * 2 ** 20;
    this.#idleMs = options.idleMs ?? 10_000;
  }

  /**
   * The photo as the pipeline reads it: an HEIC/HEIF decoded to its pixels, anything else
   * the bytes as they are. An HEIC over `maxPixels` by its header is refused before it waits
   * for a thread (422 too_many_pixels). When `signal` aborts (the request's deadline, its
   * client gone), the photo leaves the queue, or its thread is ended mid-decode, and the
   * promise rejects with the signal's reason.
   */
  async readable(photo: Uint8Array, maxPixels: number, signal?: AbortSignal): Promise<PhotoInput> {
    if (!isHeif(photo)) return photo;
    const header = await heifHeader(photo);
    signal?.throwIfAborted();
    const pixels = header && header.width * header.height;
    if (pixels && pixels > maxPixels) throw new CutoutError('too_many_pixels', `The image has more than ${maxPixels} pixels.`);
    const orientation = heifExifOrientation(photo, header?.exif);
    // A header sharp cannot read counts as large: its size is libheif's to find.
    const large = !pixels || pixels > this.#largePixels;
    return new Promise((resolve, reject) => {
      if (this.#closed) return reject(new Error('the HEIC threads are closed'));
      const onAbort = () => {
        const waiting = this.#waiting.indexOf(job);
        if (waiting < 0) return; // decoding: #decode ends it
        this.#waiting.splice(waiting, 1);
        reject(signal?.reason as Error);
      };
      // The listener goes with the job: a signal that outlives it must not keep its pixels.
      const settled = () => signal?.removeEventListener('abort', onAbort);
      const job: Job = {
        request: { heic: photo, maxPixels, orientation, lowPriority: large },
        large,
        signal,
        resolve: (decoded) => (settled(), resolve(decoded)),
        reject: (error) => (settled(), reject(error)),
      };
      this.#waiting.push(job);
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#dispatch();
    });
  }

  /** Threads started and not yet ended: decoding, or idle until `idleMs` passes. */
  get threadCount(): number {
    return this.#workers.size;
  }

  /** Ends every thread; photos waiting or being decoded fail. */
  async close(): Promise<void> {
    this.#closed = true;
    for (const job of this.#waiting.splice(0)) job.reject(new Error('the HEIC threads are closed'));
    for (const idle of this.#idle.splice(0)) clearTimeout(idle.idleTimer);
    await Promise.all([...this.#workers].map((worker) => worker.terminate()));
  }

  /** Starts every waiting photo a thread may take now, in order of arrival. */
  #dispatch(): void {
    const largeLimit = Math.max(1, this.#threads - 1);
    for (let i = 0; i < this.#waiting.length && this.#running < this.#threads; ) {
      const job = this.#waiting[i];
      if (job.large && this.#runningLarge >= largeLimit) {
        i++;
        continue;
      }
      this.#waiting.splice(i, 1);
      this.#running++;
      if (job.large) this.#runningLarge++;
      void this.#decode(job).finally(() => {
        this.#running--;
        if (job.large) this.#runningLarge--;
        this.#dispatch();
      });
      // The next small photo should find a thread ready, not pay for starting one.
      if (job.large && this.#idle.length === 0 && !this.#spare && this.#workers.size + this.#starting < this.#threads) this.#startSpare();
    }
  }

  #startSpare(): void {
    const spare = this.#start();
    this.#spare = spare;
    spare.then(
      (thread) => {
        if (this.#spare !== spare) return; // a photo took it
        this.#spare = undefined;
        this.#rest(thread);
        this.#dispatch();
      },
      () => {
        if (this.#spare === spare) this.#spare = undefined;
      },
    );
  }

  async #decode(job: Job): Promise<void> {
    let thread = this.#idle.pop();
    try {
      if (!thread) {
        const spare = this.#spare;
        this.#spare = undefined;
        thread = await (spare ?? this.#start());
      }
    } catch (error) {
      return job.reject(error as Error);
    }
    clearTimeout(thread.idleTimer);
    if (job.signal?.aborted) {
      this.#rest(thread);
      return job.reject(job.signal.reason as Error);
    }
    const { worker } = thread;
    worker.ref();
    const id = this.#nextId++;
    const result = await new Promise<HeicResult | Error>((resolve) => {
      const onMessage = (message: HeicResult) => message.id === id && settle(message);
      const onError = (error: Error) => settle(error);
      const onExit = (code: number) => settle(new Error(`the HEIC thread exited with code ${code}`));
      // Ending the thread is the only way to stop libheif mid-decode; it takes its memory along.
      const onAbort = () => settle(job.signal?.reason as Error);
      const settle = (outcome: HeicResult | Error) => {
        worker.off('message', onMessage).off('error', onError).off('exit', onExit);
        job.signal?.removeEventListener('abort', onAbort);
        resolve(outcome);
      };
      worker.on('message', onMessage).on('error', onError).on('exit', onExit);
      job.signal?.addEventListener('abort', onAbort, { once: true });
      worker.postMessage({ id, ...job.request } satisfies HeicRequest);
    });
    worker.unref();
    if (result instanceof Error) {
      this.#workers.delete(worker);
      void worker.terminate();
      return job.reject(result);
    }
    // A thread that decoded a large photo lowered its own priority, for good.
    if (job.large || result.decoderBytes > this.#keepDecoderBytes || this.#closed) {
      this.#workers.delete(worker);
      void worker.terminate();
    } else {
      this.#rest(thread);
    }
    if (result.error) job.reject(fromThreadError(result.error));
    else job.resolve(result.pixels);
  }

  async #start(): Promise<HeicWorker> {
    this.#starting++;
    const { worker } = await startWorkerThread(besideThisModule(import.meta.url, 'heic-worker')).finally(() => this.#starting--);
    if (this.#closed) {
      void worker.terminate();
      throw new Error('the HEIC threads are closed');
    }
    worker.unref();
    this.#workers.add(worker);
    // A thread that dies while idle is forgotten; one that dies decoding fails its photo (#decode).
    worker.once('exit', () => {
      this.#workers.delete(worker);
      this.#idle = this.#idle.filter((idle) => idle.worker !== worker);
    });
    worker.on('error', () => {}); // reported by its exit
    return { worker };
  }

  /** Keeps a thread for the next photo, until it has been idle for `idleMs`. */
  #rest(thread: HeicWorker): void {
    thread.idleTimer = setTimeout(() => this.#retire(thread), this.#idleMs).unref();
    this.#idle.push(thread);
  }

  #retire(thread: HeicWorker): void {
    this.#idle = this.#idle.filter((idle) => idle !== thread);
    this.#workers.delete(thread.worker);
    void thread.worker.terminate();
  }
}
