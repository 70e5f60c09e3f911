import { CutoutError } from '../errors.js';
import type { ModelSlot } from './model-slot.js';

export interface InferenceQueueOptions {
  /** Jobs running at once. */
  concurrency: number;
  /** Jobs that may wait; one more is refused with 503 queue_full at once. */
  maxQueued: number;
  /**
   * CUTOUT_JOB_MIN_SHARE: while an image of a job (a batch job's, `jobSlot`) waits, at least
   * this share of the passes that start are jobs': one pass in `round(1 / share)`. 0: jobs
   * take only the passes requests leave. Default 0.
   */
  jobShare?: number;
}

/** Who a model pass was for: a request waiting for its answer, or an image of a batch job. */
export type PassFor = 'interactive' | 'job';

/** How many times a large photo waiting for the model may be overtaken by small ones that came after it. */
export const MAX_OVERTAKES = 2;

/** One image waiting for its turn. */
interface Waiter {
  start: () => void;
  large: boolean;
  /** Small images that were let past this one. */
  overtaken: number;
  /** An image of a batch job: it takes its turns by the job share, not in the line. */
  forJob: boolean;
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
 *
 * Batch jobs' images come through `jobSlot`. They wait outside that line: one starts when no
 * request waits, and also, while requests keep the model busy, as every `round(1 / jobShare)`-th
 * pass, so that a job always moves. A pass under way is never preempted.
 */
export class InferenceQueue implements ModelSlot {
  readonly #concurrency: number;
  readonly #maxQueued: number;
  readonly #waiting: Waiter[] = [];
  #running = 0;
  #passes = 0;
  #claims = 0;
  #averageMs = 1500;
  readonly #jobShare: number;
  /** A job's image takes every this-many-th pass while requests wait; Infinity when the share is 0. */
  readonly #jobEvery: number;
  /** Passes started for requests since the last one for a job, while a job's image waited. */
  #sinceJobPass = 0;
  readonly #passesFor: Record<PassFor, number> = { interactive: 0, job: 0 };
  #lastRequestPassAt = Number.NEGATIVE_INFINITY;

  /**
   * The model's turn for batch jobs' images: claims and runs as `run`, waiting by the job share.
   * A job runner starts an image when {@link mayStartJob} says so.
   */
  readonly jobSlot: ModelSlot = {
    claim: () => this.claim(),
    run: (work, signal, options) => this.run(work, signal, { ...options, forJob: true }),
  };

  constructor(options: InferenceQueueOptions) {
    this.#concurrency = options.concurrency;
    this.#maxQueued = options.maxQueued;
    this.#jobShare = options.jobShare ?? 0;
    this.#jobEvery = this.#jobShare > 0 ? Math.max(1, Math.round(1 / this.#jobShare)) : Number.POSITIVE_INFINITY;
  }

  /** The passes run so far, by whom they were for. */
  get passesFor(): Readonly<Record<PassFor, number>> {
    return this.#passesFor;
  }

  /** The job share this queue keeps (CUTOUT_JOB_MIN_SHARE). */
  get jobShare(): number {
    return this.#jobShare;
  }

  /**
   * Whether a job runner with `jobsUnderWay` images of jobs under way may start another: while
   * the model is idle, always (the runner keeps its own limit); while requests keep it busy,
   * one at a time when the queue keeps a job share, so that one is ready when its turn comes.
   */
  mayStartJob(jobsUnderWay: number): boolean {
    return this.idle || (this.#jobShare > 0 && jobsUnderWay === 0);
  }

  /**
   * True when a request's pass ended within the last `ms`: requests keep the model busy, and
   * jobs advance at their share rather than with every pass.
   */
  requestsWithin(ms: number): boolean {
    return performance.now() - this.#lastRequestPassAt < ms;
  }

  /** True while a job's image waits behind requests for its share of the passes. */
  get jobWaitsForShare(): boolean {
    return this.#waiting.some((waiter) => waiter.forJob) && this.#waiting.some((waiter) => !waiter.forJob);
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

  /** True when a new request would be refused right now. */
  get full(): boolean {
    return this.#running >= this.#concurrency && this.#requestsWaiting() >= this.#maxQueued;
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
   * LARGE_PHOTO_PIXELS, and small photos that come later may go first. `forJob`: an image of
   * a batch job (`jobSlot`), which takes its turn by the job share and is never refused as
   * queue_full (its runner starts one at a time while the model is busy).
   */
  async run<T>(work: () => Promise<T>, signal?: AbortSignal, { large = false, forJob = false }: { large?: boolean; forJob?: boolean } = {}): Promise<T> {
    signal?.throwIfAborted();
    if (this.#running >= this.#concurrency) {
      if (!forJob && this.#requestsWaiting() >= this.#maxQueued) throw this.fullError();
      await new Promise<void>((resolve, reject) => {
        const entry: Waiter = {
          start: () => {
            signal?.removeEventListener('abort', onAbort);
            resolve();
          },
          large,
          overtaken: 0,
          forJob,
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
      this.#passesFor[forJob ? 'job' : 'interactive']++;
      if (!forJob) this.#lastRequestPassAt = performance.now();
      this.#averageMs = 0.8 * this.#averageMs + 0.2 * (performance.now() - started);
      const next = this.#next();
      if (next) next.start();
      else this.#running--;
    }
  }

  /** Requests waiting, not counting jobs' images: the line `maxQueued` bounds. */
  #requestsWaiting(): number {
    return this.#waiting.reduce((count, waiter) => count + (waiter.forJob ? 0 : 1), 0);
  }

  /**
   * Takes the next image to run: a job's when no request waits, or when requests have had
   * `#jobEvery - 1` passes since a job's last one; otherwise a request's (`#nextRequest`).
   */
  #next(): Waiter | undefined {
    const job = this.#waiting.find((waiter) => waiter.forJob);
    const requests = this.#waiting.filter((waiter) => !waiter.forJob);
    let chosen: Waiter | undefined;
    if (job && (requests.length === 0 || this.#sinceJobPass + 1 >= this.#jobEvery)) {
      this.#sinceJobPass = 0;
      chosen = job;
    } else {
      chosen = this.#nextRequest(requests);
      if (chosen && job) this.#sinceJobPass++;
    }
    if (chosen) this.#waiting.splice(this.#waiting.indexOf(chosen), 1);
    return chosen;
  }

  /**
   * The request to run next: the first, unless it is large and may still be overtaken and a
   * small one waits behind it; then that small one, and every large one it passes counts an
   * overtaking.
   */
  #nextRequest(line: readonly Waiter[]): Waiter | undefined {
    const first = line[0];
    if (!first?.large) return first;
    const small = line.findIndex((waiter) => !waiter.large);
    const passed = line.slice(0, Math.max(0, small));
    if (small < 0 || passed.some((waiter) => waiter.overtaken >= MAX_OVERTAKES)) return first;
    for (const waiter of passed) waiter.overtaken++;
    return line[small];
  }
}
