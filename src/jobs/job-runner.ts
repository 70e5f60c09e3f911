import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../config.js';
import { CutoutError, type ErrorCode } from '../errors.js';
import { toCutoutError } from '../http/error-handler.js';
import type { InferenceQueue } from '../inference/inference-queue.js';
import type { DrainState } from '../lifecycle/drain-state.js';
import type { ModelService } from '../model/model-service.js';
import { readOptions } from '../options/read-options.js';
import { ENCODED_TYPES } from '../pipeline/answer-spec.js';
import type { RemovalService } from '../removal/removal-service.js';
import type { ClaimedJobItem } from '../store/job-records.js';
import type { Store } from '../store/store.js';
import { jobOrder, tookTurn, type Turns } from './job-turns.js';
import { resultPath } from './result-files.js';

/** What the runner needs of the process: the store, the removal service and the model's queue. */
export interface JobRunnerParts {
  config: Pick<Config, 'dataDir' | 'requestTimeoutMs' | 'inferenceConcurrency'>;
  store: Store;
  removals: Pick<RemovalService, 'fetch' | 'remove'>;
  queue: Pick<InferenceQueue, 'idle'>;
  model: Pick<ModelService, 'ready'>;
  /** Once the process drains (SIGTERM), no new item is started; those under way finish or go back at close. */
  drain?: Pick<DrainState, 'draining'>;
  log: FastifyBaseLogger;
  /** Items worked on at once; default the model's concurrency (CUTOUT_INFERENCE_CONCURRENCY). */
  inFlight?: number;
  /** Told of every item that ended (the metrics count them). */
  onItemEnd?: (state: 'succeeded' | 'failed') => void;
  /** How often the runner looks again for idle capacity and new work, in ms; default 250. */
  pollMs?: number;
  now?: () => Date;
}

/**
 * Errors that say the server, not the image, was in the way: the item goes back to the queue
 * for another attempt, up to {@link MAX_ATTEMPTS}.
 */
const RETRYABLE: ReadonlySet<ErrorCode> = new Set(['queue_full', 'not_ready', 'store_unavailable']);
const MAX_ATTEMPTS = 3;
/** Every this many polls the runner reads the store even if nothing woke it (a job made by another process). */
const RESCAN_POLLS = 20;

/** Abort reasons the runner gives its own items. */
class RunnerStop extends Error {
  constructor(readonly why: 'stopping' | 'cancelled') {
    super(`job item ${why}`);
    this.name = 'RunnerStop';
  }
}

/**
 * The embedded runner: works through the jobs' queued items from the store, one image at a
 * time through `app.removals` as a synchronous URL request would go (fetch with the same
 * guards, the same pipeline, the same problem code when it fails), and writes each result
 * under the data directory.
 *
 * Interactive requests come first: an item is started only while the model's queue is idle
 * (nothing waiting, a slot free) and fewer than `inFlight` items are under way, so a job
 * only uses the capacity the removal endpoints leave, and a request that arrives meanwhile
 * waits behind at most the items already started. Tokens take turns, and each token's jobs
 * take turns (`job-turns.ts`). An item is counted in the token's usage in the transaction
 * that ends it (`finishJobItem`), and only by the claim that still holds it, so an item
 * redone after a restart is counted once.
 *
 * @example const runner = new JobRunner({ config, store, removals, queue, model, log }); await runner.start()
 */
export class JobRunner {
  readonly #parts: JobRunnerParts;
  readonly #inFlight: number;
  readonly #now: () => Date;
  readonly #items = new Map<string, { claim: ClaimedJobItem; controller: AbortController; done: Promise<void> }>();
  readonly #turns: Turns = { lastJobOf: new Map() };
  #mayHaveWork = true;
  #requeued = false;
  #storeAway = false;
  #polls = 0;
  #ticking = false;
  #closed = false;
  #timer: NodeJS.Timeout | undefined;

  constructor(parts: JobRunnerParts) {
    this.#parts = parts;
    this.#inFlight = parts.inFlight ?? parts.config.inferenceConcurrency;
    this.#now = parts.now ?? (() => new Date());
  }

  /** Items being worked on now. */
  get inFlight(): number {
    return this.#items.size;
  }

  /**
   * Starts polling. Before its first item, the runner puts the items a previous process left
   * `running` back in the queue (that process is gone: this runner is the only one on its
   * data directory); while the store cannot be reached it tries again at each poll, so a
   * database away at start-up does not stop the server from starting.
   */
  async start(): Promise<void> {
    this.#timer = setInterval(() => {
      if (++this.#polls % RESCAN_POLLS === 0) this.#mayHaveWork = true;
      void this.#tick();
    }, this.#parts.pollMs ?? 250);
    this.#timer.unref();
    this.wake();
  }

  /** New work: look for it now rather than at the next poll. */
  wake(): void {
    this.#mayHaveWork = true;
    void this.#tick();
  }

  /** Stops the job's items in flight; the store has already marked them cancelled. */
  cancel(jobId: string): void {
    for (const { claim, controller } of this.#items.values()) if (claim.jobId === jobId) controller.abort(new RunnerStop('cancelled'));
  }

  /** Stops taking items, drops those in flight back into the queue for the next start, and waits for them. */
  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#timer);
    for (const { controller } of this.#items.values()) controller.abort(new RunnerStop('stopping'));
    await Promise.allSettled([...this.#items.values()].map((item) => item.done));
  }

  async #tick(): Promise<void> {
    if (this.#ticking) return;
    this.#ticking = true;
    const { queue, model, log, store } = this.#parts;
    try {
      if (!this.#requeued) {
        const requeued = await store.requeueRunningJobItems();
        this.#requeued = true;
        if (requeued > 0) log.info({ requeued }, 'job items left running by the previous process queued again');
      }
      while (!this.#closed && !this.#parts.drain?.draining && this.#mayHaveWork && this.#items.size < this.#inFlight && queue.idle && model.ready) {
        const claim = await this.#claimNext();
        if (!claim) {
          this.#mayHaveWork = false;
          break;
        }
        this.#begin(claim);
      }
      this.#storeAway = false;
    } catch (error) {
      // Once per outage: the runner tries again at every poll.
      if (!this.#storeAway) log.warn({ err: error }, 'the job runner could not read the store; trying again shortly');
      this.#storeAway = true;
    } finally {
      this.#ticking = false;
    }
  }

  async #claimNext(): Promise<ClaimedJobItem | undefined> {
    const { store } = this.#parts;
    for (const job of jobOrder(await store.listOpenJobs(), this.#turns)) {
      const claim = await store.claimJobItem(job.id);
      if (claim) {
        tookTurn(this.#turns, job);
        return claim;
      }
    }
    return undefined;
  }

  #begin(claim: ClaimedJobItem): void {
    const key = `${claim.jobId}/${claim.index}`;
    const controller = new AbortController();
    const done = this.#run(claim, controller.signal).finally(() => {
      this.#items.delete(key);
      void this.#tick();
    });
    this.#items.set(key, { claim, controller, done });
  }

  async #run(claim: ClaimedJobItem, signal: AbortSignal): Promise<void> {
    const { config, store, removals, log } = this.#parts;
    const deadlineMs = config.requestTimeoutMs;
    const deadline = new AbortController();
    const timer = setTimeout(() => deadline.abort(new CutoutError('deadline_exceeded', `The image did not finish within ${deadlineMs} ms.`)), deadlineMs);
    const both = AbortSignal.any([signal, deadline.signal]);
    try {
      const options = readOptions(claim.options, 'native');
      const photo = claim.inputPath ? await readFile(join(config.dataDir, claim.inputPath)) : await removals.fetch(claim.imageUrl ?? '', 'image_url', both);
      if (photo.length === 0) throw new CutoutError('invalid_request', 'The image is empty (0 bytes).');
      const result = await removals.remove(photo, both, { options });
      const path = resultPath(claim.jobId, claim.index, result.format);
      await writeAtomically(join(config.dataDir, path), result.bytes);
      const megapixels = (result.input.width * result.input.height) / 1e6;
      const ended = await store.finishJobItem(claim, { state: 'succeeded', resultPath: path, contentType: ENCODED_TYPES[result.format], megapixels }, this.#now().toISOString());
      if (ended) this.#parts.onItemEnd?.('succeeded');
      // An uploaded image is no longer needed once its result is kept.
      if (ended && claim.inputPath) await rm(join(config.dataDir, claim.inputPath), { force: true });
    } catch (error) {
      await this.#failed(claim, signal.aborted ? signal.reason : error).catch((storeError: unknown) => {
        // The item stays `running` in the store; the next start queues it again.
        log.warn({ err: storeError, job: claim.jobId, item: claim.index }, 'a job item\'s end could not be recorded');
      });
    } finally {
      clearTimeout(timer);
    }
  }

  async #failed(claim: ClaimedJobItem, error: unknown): Promise<void> {
    const { store, log } = this.#parts;
    if (error instanceof RunnerStop) {
      if (error.why === 'stopping') await store.returnJobItem(claim);
      return;
    }
    const problem = toCutoutError(error);
    if (RETRYABLE.has(problem.code) && claim.attempt < MAX_ATTEMPTS) {
      await store.returnJobItem(claim);
      this.#mayHaveWork = true;
      return;
    }
    if (problem.code === 'internal_error') log.error({ err: error, job: claim.jobId, item: claim.index }, 'a job item failed');
    const ended = await store.finishJobItem(claim, { state: 'failed', problemCode: problem.code, problemDetail: problem.message, status: problem.status }, this.#now().toISOString());
    if (ended) this.#parts.onItemEnd?.('failed');
  }
}

/** Writes beside the file, then renames: a reader never sees half a result. */
async function writeAtomically(path: string, bytes: Uint8Array): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  const partial = `${path}.partial`;
  await writeFile(partial, bytes);
  await rename(partial, path);
}
