import type { Config } from '../config.js';
import type { InferenceQueue } from '../inference/inference-queue.js';
import type { DrainState } from '../lifecycle/drain-state.js';
import type { ModelService } from '../model/model-service.js';
import type { ClaimedJobItem } from '../store/job-records.js';
import { jobOrder, tookTurn, type Turns } from './job-turns.js';
import type { JobWork } from './job-work.js';
import { ItemStop, runJobItem, type ItemRunParts } from './run-job-item.js';

/** What the runner needs of the process: what working on an item needs, and the model's queue. */
export interface JobRunnerParts extends ItemRunParts {
  config: Pick<Config, 'dataDir' | 'requestTimeoutMs' | 'inferenceConcurrency'>;
  queue: Pick<InferenceQueue, 'mayStartJob'>;
  model: Pick<ModelService, 'ready'>;
  /** Once the process drains (SIGTERM), no new item is started; those under way finish or go back at close. */
  drain?: Pick<DrainState, 'draining'>;
  /** Items worked on at once; default the model's concurrency (CUTOUT_INFERENCE_CONCURRENCY). */
  inFlight?: number;
  /** How often the runner looks again for idle capacity and new work, in ms; default 250. */
  pollMs?: number;
}

/** Every this many polls the runner reads the store even if nothing woke it (a job made by another process). */
const RESCAN_POLLS = 20;
/** How long the runner waits after an item the server was in the way of before it takes one again. */
const AFTER_HAND_BACK_MS = 1000;

/**
 * The embedded runner: works through the jobs' queued items from the store, one image at a
 * time through `app.removals` as a synchronous URL request would go (fetch with the same
 * guards, the same pipeline, the same problem code when it fails), and writes each result
 * under the data directory.
 *
 * Interactive requests come first, and jobs always move: an item is started while the
 * model's queue is idle (nothing waiting, a slot free) and fewer than `inFlight` items are
 * under way, and, while requests keep the model busy, one at a time, to take the passes the
 * job share keeps for jobs (CUTOUT_JOB_MIN_SHARE, `InferenceQueue.mayStartJob`). Tokens take
 * turns, and each token's jobs take turns (`job-turns.ts`). An item is counted in the token's usage in the transaction
 * that ends it (`finishJobItem`), and only by the claim that still holds it, so an item
 * redone after a restart is counted once. The store's claim keeps the recovery rule
 * (`MAX_ITEM_STARTS`): an image whose server died with it five times is failed, not started.
 *
 * @example const runner = new JobRunner({ config, store, removals, queue, model, log }); await runner.start()
 */
export class JobRunner implements JobWork {
  readonly #parts: JobRunnerParts;
  readonly #inFlight: number;
  readonly #items = new Map<string, { claim: ClaimedJobItem; controller: AbortController; done: Promise<void> }>();
  readonly #turns: Turns = { lastJobOf: new Map() };
  #mayHaveWork = true;
  #requeued = false;
  #storeAway = false;
  #polls = 0;
  #holdUntil = 0;
  #ticking = false;
  #closed = false;
  #timer: NodeJS.Timeout | undefined;

  constructor(parts: JobRunnerParts) {
    this.#parts = parts;
    this.#inFlight = parts.inFlight ?? parts.config.inferenceConcurrency;
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

  /** A job was stored: look for its items now. */
  async jobMade(): Promise<void> {
    this.wake();
  }

  /** Its queued items in the store, across the open jobs. */
  queuedItems(): Promise<number> {
    return this.#parts.store.countQueuedJobItems();
  }

  /** Stops the job's items in flight; the store has already marked them cancelled. */
  async cancel(jobId: string): Promise<void> {
    for (const { claim, controller } of this.#items.values()) if (claim.jobId === jobId) controller.abort(new ItemStop('cancelled'));
  }

  /** Stops taking items, drops those in flight back into the queue for the next start, and waits for them. */
  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#timer);
    for (const { controller } of this.#items.values()) controller.abort(new ItemStop('stopping'));
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
      while (!this.#closed && !this.#parts.drain?.draining && this.#mayHaveWork && Date.now() >= this.#holdUntil && this.#items.size < this.#inFlight && queue.mayStartJob(this.#items.size) && model.ready) {
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

  /** The next item in the tokens' turns; items given up on the way are failed and reported. */
  async #claimNext(): Promise<ClaimedJobItem | undefined> {
    const { store, log } = this.#parts;
    const now = this.#parts.now ?? (() => new Date());
    for (const job of jobOrder(await store.listOpenJobs(), this.#turns)) {
      for (;;) {
        const claim = await store.claimJobItem(job.id, now().toISOString());
        if (!claim) break;
        tookTurn(this.#turns, job);
        if (claim.kind === 'claimed') return claim.item;
        // One node holds no item it did not claim itself: `held` is the fleet's.
        if (claim.kind !== 'gave_up') break;
        log.warn({ job: claim.jobId, item: claim.index, starts: claim.starts }, 'a job image was started as often as it may be, its server dying each time: failed with too_many_starts');
        this.#parts.onItemEnd?.('failed', 'too_many_starts');
      }
    }
    return undefined;
  }

  #begin(claim: ClaimedJobItem): void {
    const key = `${claim.jobId}/${claim.index}`;
    const controller = new AbortController();
    const done = runJobItem(this.#parts, claim, controller.signal)
      .then((end) => {
        if (end !== 'returned') return;
        this.#mayHaveWork = true;
        this.#holdUntil = Date.now() + AFTER_HAND_BACK_MS;
      })
      .finally(() => {
        this.#items.delete(key);
        void this.#tick();
      });
    this.#items.set(key, { claim, controller, done });
  }
}

