import { setTimeout as sleep } from 'node:timers/promises';
import { DelayedError, Queue, WaitingError, Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Config } from '../config.js';
import type { InferenceQueue } from '../inference/inference-queue.js';
import type { DrainState } from '../lifecycle/drain-state.js';
import type { ModelService } from '../model/model-service.js';
import type { ClaimedJobItem, JobRecord } from '../store/job-records.js';
import { fleetPriority, PRIORITY_LIMIT } from './fleet-priority.js';
import type { JobWork } from './job-work.js';
import { ItemStop, runJobItem, type ItemRunParts } from './run-job-item.js';

/** What the fleet's worker needs of the process: the embedded runner's parts, and Redis. */
export interface FleetRunnerParts extends ItemRunParts {
  config: Pick<Config, 'dataDir' | 'requestTimeoutMs' | 'inferenceConcurrency' | 'jobQueue' | 'jobStalledMs'> & { redisUrl: string };
  queue: Pick<InferenceQueue, 'idle'>;
  model: Pick<ModelService, 'ready'>;
  drain?: Pick<DrainState, 'draining'>;
  /** The app's shared connection (`app.redis`): cancellations are published on it, and heard on a copy of it. */
  redis: Redis;
  /** Items worked on at once by this replica; default CUTOUT_INFERENCE_CONCURRENCY. */
  inFlight?: number;
  /** How often a waiting item looks again for idle capacity, in ms; default 250. */
  pollMs?: number;
}

/** One BullMQ job: one item of one Cutout job. */
interface ItemRef {
  jobId: string;
  index: number;
}

/**
 * Starts an item may have had (its claims: by a replica that died, or was stopped, or the
 * server was in the way) before it is failed rather than tried again: an image that kills
 * every replica that takes it must not go round the fleet for ever. BullMQ's own stalled
 * count is set above it, so that the store, which counts the attempts, decides.
 */
const MAX_STARTS = 5;
/** How long an item the server was in the way of waits before another replica tries it. */
const RETRY_DELAY_MS = 1000;
/** Items added to BullMQ per round trip. */
const ADD_CHUNK = 500;
/** How often a replica that could not hand a job's items to BullMQ tries again from the store. */
const REQUEUE_EVERY_MS = 30_000;
/** How long a replica whose model is busy holds an item it took before it lets another replica have it. */
const HOLD_WHILE_BUSY_MS = 2000;

/**
 * How long closing waits for BullMQ's worker to let go. Its blocking connection, closed
 * between two attempts to reconnect to a Redis that was away, never reports its end
 * (ioredis), and the worker's close would wait for it for ever: past this, the worker's
 * connections are dropped and closing goes on. Its items are given back before.
 */
const WORKER_CLOSE_WAIT_MS = 5000;

/** BullMQ refuses ':' in a custom job id: `<job id>.<index>` is one item, whichever replica adds it. */
export const itemJobId = (jobId: string, index: number): string => `${jobId}.${index}`;

/**
 * The jobs' runner across replicas (REDIS_URL set): every item of a job is one BullMQ job
 * of one shared queue, and every replica runs a BullMQ Worker over it. A replica starts an
 * item only while its own model's queue is idle (interactive requests first; BullMQ keeps
 * the item's lock alive meanwhile), then claims it in the store (`claimJobItemAt`), works on
 * it as the embedded runner does (`runJobItem`) and ends it with `finishJobItem`, which
 * counts it in the usage for the claim that still holds it.
 *
 * A replica that dies stops renewing its locks: BullMQ's stalled check gives its items to
 * another replica, which claims them from `running` with a new attempt, so the dead one's
 * claim can no longer count. On SIGTERM the items in flight go back to the queue at once.
 * A cancellation is published on Redis, so the replica working on an item of the job stops it.
 *
 * @example const runner = new FleetRunner(parts); await runner.start()
 */
export class FleetRunner implements JobWork {
  readonly #parts: FleetRunnerParts;
  readonly #concurrency: number;
  readonly #queue: Queue<ItemRef>;
  readonly #worker: Worker<ItemRef>;
  readonly #subscriber: Redis;
  readonly #channel: string;
  readonly #items = new Map<string, { claim: ClaimedJobItem; controller: AbortController }>();
  #closed = false;
  #requeueTimer: NodeJS.Timeout | undefined;
  #watchTimer: NodeJS.Timeout | undefined;
  #workerAway = false;

  constructor(parts: FleetRunnerParts) {
    this.#parts = parts;
    const { config, log } = parts;
    this.#concurrency = parts.inFlight ?? config.inferenceConcurrency;
    // BullMQ's own connections: its worker blocks on Redis and must retry for ever, which the
    // app's fail-fast connection (`open-redis.ts`) does not.
    const connection = { url: config.redisUrl, maxRetriesPerRequest: null };
    // An error the processor does not handle itself (Redis away while it gives an item back)
    // is tried again a little later; an entry that failed for good is removed, so that the
    // item can be added again from the store.
    const defaultJobOptions = { removeOnComplete: true, removeOnFail: true, attempts: MAX_STARTS, backoff: { type: 'fixed', delay: RETRY_DELAY_MS } };
    this.#queue = new Queue<ItemRef>(config.jobQueue, { connection, defaultJobOptions });
    this.#queue.on('error', (error) => log.debug({ err: error }, 'the jobs\' BullMQ queue lost Redis'));
    this.#worker = new Worker<ItemRef>(config.jobQueue, (job, token) => this.#process(job, token), {
      connection,
      autorun: false,
      concurrency: this.#concurrency,
      lockDuration: config.jobStalledMs,
      stalledInterval: config.jobStalledMs,
      maxStalledCount: MAX_STARTS,
    });
    this.#worker.on('error', (error) => {
      if (this.#workerAway) return;
      this.#workerAway = true;
      log.warn({ err: error }, 'the jobs\' BullMQ worker cannot reach Redis; it tries again by itself');
    });
    this.#worker.on('active', () => (this.#workerAway = false));
    this.#channel = `cutout:${config.jobQueue}:cancelled`;
    this.#subscriber = parts.redis.duplicate({ enableOfflineQueue: true });
    this.#subscriber.on('error', () => undefined);
    this.#subscriber.on('message', (_channel: string, jobId: string) => this.#stopLocally(jobId));
  }

  get inFlight(): number {
    return this.#items.size;
  }

  /**
   * Subscribes to cancellations, hands BullMQ the queued items it may not have (a job made
   * while Redis was away, or a Redis that lost its data), and starts the worker. Unlike the
   * embedded runner it puts no `running` item back: those may be other replicas' items.
   */
  async start(): Promise<void> {
    await this.#subscriber.subscribe(this.#channel).catch((error: unknown) => this.#parts.log.warn({ err: error }, 'cancellations cannot be heard from other replicas until Redis is back'));
    this.#watchTimer = setInterval(() => this.#fetchOnlyWhenIdle(), this.#parts.pollMs ?? 250);
    this.#watchTimer.unref();
    this.#fetchOnlyWhenIdle();
    void this.#worker.run().catch((error: unknown) => this.#parts.log.error({ err: error }, 'the jobs\' BullMQ worker stopped'));
    void this.#requeueFromStore();
  }

  /**
   * Interactive requests first: while this replica's model is busy (or not loaded yet, or the
   * process is draining) its worker fetches nothing, so the items wait in Redis for an idle replica rather than here.
   */
  #fetchOnlyWhenIdle(): void {
    const { queue, model, drain } = this.#parts;
    if (this.#closed) return;
    // A draining replica stays paused: the others take the items.
    const idle = queue.idle && model.ready && !drain?.draining;
    if (!idle && !this.#worker.isPaused()) void this.#worker.pause(true).catch(() => undefined);
    else if (idle && this.#worker.isPaused()) void this.#worker.resume().catch(() => undefined);
  }

  /**
   * Adds the job's items to the shared queue, each with a priority from its place among its
   * token's waiting items (`fleet-priority.ts`), and with the id `<job>.<index>` so that the
   * same item added twice is one BullMQ job.
   */
  async jobMade(job: Pick<JobRecord, 'id' | 'userTokenId' | 'itemCount'>): Promise<void> {
    try {
      const { queuedItems } = await this.#parts.store.openJobLoad(job.userTokenId);
      const ahead = Math.max(0, queuedItems - job.itemCount);
      await this.#add(job.id, Array.from({ length: job.itemCount }, (_, index) => index), ahead);
    } catch (error) {
      this.#parts.log.warn({ err: error, job: job.id }, 'a job\'s images could not be handed to the other replicas; this replica tries again from the store');
      this.#requeueTimer ??= setTimeout(() => void this.#requeueFromStore(), REQUEUE_EVERY_MS).unref();
    }
  }

  /**
   * Stops the job's items on every replica (this one at once, the others through Redis), and
   * takes its waiting items out of the queue. An item that ends anyway is not counted: the
   * store refuses to end an item of a cancelled job.
   */
  async cancel(jobId: string): Promise<void> {
    this.#stopLocally(jobId);
    await this.#parts.redis.publish(this.#channel, jobId).catch(() => undefined);
    const job = await this.#parts.store.countJobItems(jobId).catch(() => undefined);
    if (!job) return;
    const total = Object.values(job).reduce((sum, count) => sum + count, 0);
    void this.#removeWaiting(jobId, total);
  }

  async queuedItems(): Promise<number> {
    const counts = await this.#queue.getJobCounts('wait', 'prioritized', 'delayed');
    return Object.values(counts).reduce((sum, count) => sum + count, 0);
  }

  /**
   * Stops taking items and gives those in flight back to the queue (in the store, and to
   * BullMQ for another replica), then waits for the worker to let go of them.
   */
  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#requeueTimer);
    clearInterval(this.#watchTimer);
    for (const { controller } of this.#items.values()) controller.abort(new ItemStop('stopping'));
    const waited = new AbortController();
    const closed = await Promise.race([
      this.#worker.close().then(() => true),
      sleep(WORKER_CLOSE_WAIT_MS, false, { signal: waited.signal }).catch(() => false),
    ]);
    waited.abort();
    if (!closed) {
      this.#parts.log.warn('the jobs\' BullMQ worker did not close in time (Redis was away); its connections are dropped');
      void this.#worker.disconnect().catch(() => undefined);
    }
    await this.#queue.close();
    await this.#subscriber.quit().catch(() => this.#subscriber.disconnect());
  }

  async #process(job: Job<ItemRef>, token: string | undefined): Promise<void> {
    const { jobId, index } = job.data;
    if (!(await this.#turnCame())) return this.#giveBack(job, token);
    let claim: ClaimedJobItem | undefined;
    try {
      claim = await this.#parts.store.claimJobItemAt(jobId, index);
    } catch {
      // The store is away: the item waits in BullMQ, not in this process.
      await job.moveToDelayed(Date.now() + RETRY_DELAY_MS, token);
      throw new DelayedError();
    }
    // Finished or cancelled (or its job deleted): nothing to do.
    if (!claim) return;
    if (claim.attempt > MAX_STARTS) {
      const detail = `The image was started ${claim.attempt - 1} times and never finished; the server working on it stopped each time.`;
      const ended = await this.#parts.store.finishJobItem(claim, { state: 'failed', problemCode: 'internal_error', problemDetail: detail, status: 500 }, new Date().toISOString());
      if (ended) this.#parts.onItemEnd?.('failed', 'internal_error');
      return;
    }
    const key = itemJobId(jobId, index);
    const controller = new AbortController();
    this.#items.set(key, { claim, controller });
    try {
      const end = await runJobItem(this.#parts, claim, controller.signal);
      if (end === 'returned') {
        await job.moveToDelayed(Date.now() + RETRY_DELAY_MS, token);
        throw new DelayedError();
      }
      if (end === 'stopped') return this.#giveBack(job, token);
    } finally {
      this.#items.delete(key);
    }
  }

  /**
   * Waits until this replica may start an item: its model ready and its queue idle (BullMQ's
   * concurrency keeps the items under way to CUTOUT_INFERENCE_CONCURRENCY). False when the
   * process is stopping instead, or when the model stayed busy long enough that another
   * replica should have the item.
   */
  async #turnCame(): Promise<boolean> {
    const { queue, model, drain } = this.#parts;
    const giveUpAt = Date.now() + HOLD_WHILE_BUSY_MS;
    for (;;) {
      if (this.#closed || drain?.draining) {
        // No new item from a draining replica: the others take them.
        if (!this.#closed) void this.#worker.pause(true).catch(() => undefined);
        return false;
      }
      if (queue.idle && model.ready) return true;
      if (Date.now() > giveUpAt) return false;
      await sleep(this.#parts.pollMs ?? 250);
    }
  }

  /** Puts the BullMQ job back in the waiting queue (with its priority) for any replica. */
  async #giveBack(job: Job<ItemRef>, token: string | undefined): Promise<never> {
    await job.moveToWait(token);
    throw new WaitingError();
  }

  #stopLocally(jobId: string): void {
    for (const { claim, controller } of this.#items.values()) if (claim.jobId === jobId) controller.abort(new ItemStop('cancelled'));
  }

  async #add(jobId: string, indexes: readonly number[], ahead: number): Promise<void> {
    for (let start = 0; start < indexes.length; start += ADD_CHUNK) {
      const chunk = indexes.slice(start, start + ADD_CHUNK);
      await this.#queue.addBulk(
        chunk.map((index, offset) => ({ name: 'item', data: { jobId, index }, opts: { jobId: itemJobId(jobId, index), priority: fleetPriority(ahead + start + offset) } })),
      );
    }
  }

  async #removeWaiting(jobId: string, total: number): Promise<void> {
    for (let start = 0; start < total; start += ADD_CHUNK) {
      const ids = Array.from({ length: Math.min(ADD_CHUNK, total - start) }, (_, offset) => itemJobId(jobId, start + offset));
      // An item being worked on is locked and stays: its replica was told to stop it.
      await Promise.all(ids.map((id) => this.#queue.remove(id).catch(() => 0)));
    }
  }

  /**
   * Adds every `queued` item of the open jobs to BullMQ; those it has already are not added
   * twice (their ids). Priorities count each token's items in the order of its jobs.
   */
  async #requeueFromStore(): Promise<void> {
    this.#requeueTimer = undefined;
    const { store, log } = this.#parts;
    try {
      const ahead = new Map<string, number>();
      let added = 0;
      for (const job of await store.listOpenJobs()) {
        if (this.#closed) return;
        for (let after = -1; ; ) {
          const indexes = await store.listQueuedJobItems(job.id, after, ADD_CHUNK);
          if (indexes.length === 0) break;
          const before = ahead.get(job.userTokenId) ?? 0;
          await this.#add(job.id, indexes, Math.min(before, PRIORITY_LIMIT));
          ahead.set(job.userTokenId, before + indexes.length);
          added += indexes.length;
          after = indexes[indexes.length - 1]!;
        }
      }
      if (added > 0) log.info({ items: added }, 'queued images of jobs handed to BullMQ (those it had already were kept as they were)');
    } catch (error) {
      log.warn({ err: error }, 'the queued images of jobs could not be handed to BullMQ; trying again shortly');
      if (!this.#closed) this.#requeueTimer = setTimeout(() => void this.#requeueFromStore(), REQUEUE_EVERY_MS).unref();
    }
  }
}
