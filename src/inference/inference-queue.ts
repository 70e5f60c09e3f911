import { CutoutError } from '../errors.js';
import type { ModelSlot } from './model-slot.js';

export interface InferenceQueueOptions {
  /** Jobs running at once. */
  concurrency: number;
  /** Jobs that may wait; one more is refused with 503 queue_full at once. */
  maxQueued: number;
}

/** How many times a large photo waiting for the model may be overtaken by small ones that came after it. */
export const MAX_OVERTAKES = 2;

/** One image waiting for its turn. */
interface Waiter {
  start: () => void;
  large: boolean;
  /** Small images that were let past this one. */
  overtaken: number;
}

/**
 * A bounded queue in front of the model: at most `concurrency` runs at once, at most
 * `maxQueued` waiting. Waiting work whose signal aborts (client gone, deadline) leaves the
 * queue without running. Tracks a moving average of run time for Retry-After.
 *
 * Small photos go first: the model's pass costs the same for every photo, but a large one
 * also brings seconds of full-size work around it, and an ordinary photo that waited behind
 * a few of them would take several times its time alone. A waiting small photo is let past
 * the large ones before it, each of which may be overtaken at most {@link MAX_OVERTAKES}
 * times, so a large photo still gets its turn while small ones keep coming.
 */
export class InferenceQueue implements ModelSlot {
  readonly #concurrency: number;
  readonly #maxQueued: number;
  readonly #waiting: Waiter[] = [];
  #running = 0;
  #passes = 0;
  #claims = 0;
  #averageMs = 1500;

  constructor(options: InferenceQueueOptions) {
    this.#concurrency = options.concurrency;
    this.#maxQueued = options.maxQueued;
  }

  get running(): number {
    return this.#running;
  }

  get queued(): number {
    return this.#waiting.length;
  }

  /** Jobs that have run to the end (or failed) since the start: for the model, its passes. */
  get passes(): number {
    return this.#passes;
  }

  /** True when a new job would start at once: a slot is free, nothing waits and no job has claimed the slot. */
  get idle(): boolean {
    return this.#running + this.#claims < this.#concurrency && this.#waiting.length === 0;
  }

  /**
   * Claims the free slot for a job still preparing its input, so that `idle` is false for
   * the jobs that arrive behind it: when a burst arrives at an idle model, only the first
   * image may start work that is worth doing only while the model is free. Returns the
   * release, to be called when the job is handed to `run` (or fails before), or undefined
   * when the model is not idle. A claim does not hold `run` back for other jobs.
   */
  claim(): (() => void) | undefined {
    if (!this.idle) return undefined;
    this.#claims++;
    let released = false;
    return () => {
      if (!released) this.#claims--;
      released = true;
    };
  }

  /** True when a new job would be refused right now. */
  get full(): boolean {
    return this.#running >= this.#concurrency && this.#waiting.length >= this.#maxQueued;
  }

  /** Seconds a client should wait before retrying, from the queue's length and recent run times. */
  retryAfterSeconds(): number {
    const ahead = this.#running + this.#waiting.length;
    return Math.max(1, Math.ceil((ahead * this.#averageMs) / this.#concurrency / 1000));
  }

  /** The error a full queue answers with. */
  fullError(): CutoutError {
    return new CutoutError('queue_full', `${this.#waiting.length} images are already waiting for the model; retry in a few seconds.`, {
      headers: { 'retry-after': String(this.retryAfterSeconds()) },
    });
  }

  /**
   * Runs `work` when a slot is free. Throws queue_full at once when the queue is full, and
   * the signal's reason if it aborts while waiting. `large`: the photo is over
   * LARGE_PHOTO_PIXELS, and small photos that come later may go first.
   */
  async run<T>(work: () => Promise<T>, signal?: AbortSignal, { large = false }: { large?: boolean } = {}): Promise<T> {
    signal?.throwIfAborted();
    if (this.#running >= this.#concurrency) {
      if (this.#waiting.length >= this.#maxQueued) throw this.fullError();
      await new Promise<void>((resolve, reject) => {
        const entry: Waiter = {
          start: () => {
            signal?.removeEventListener('abort', onAbort);
            resolve();
          },
          large,
          overtaken: 0,
        };
        const onAbort = () => {
          const at = this.#waiting.indexOf(entry);
          if (at >= 0) this.#waiting.splice(at, 1);
          reject(signal?.reason);
        };
        signal?.addEventListener('abort', onAbort, { once: true });
        this.#waiting.push(entry);
      });
    } else {
      this.#running++;
    }
    const started = performance.now();
    try {
      return await work();
    } finally {
      this.#passes++;
      this.#averageMs = 0.8 * this.#averageMs + 0.2 * (performance.now() - started);
      const next = this.#next();
      if (next) next.start();
      else this.#running--;
    }
  }

  /**
   * Takes the next image from the waiting line: the first, unless it is large and may still
   * be overtaken and a small one waits behind it; then that small one, and every large one it
   * passes counts an overtaking.
   */
  #next(): Waiter | undefined {
    const first = this.#waiting[0];
    if (!first?.large) return this.#waiting.shift();
    const small = this.#waiting.findIndex((waiter) => !waiter.large);
    const passed = this.#waiting.slice(0, Math.max(0, small));
    if (small < 0 || passed.some((waiter) => waiter.overtaken >= MAX_OVERTAKES)) return this.#waiting.shift();
    for (const waiter of passed) waiter.overtaken++;
    return this.#waiting.splice(small, 1)[0];
  }
}
