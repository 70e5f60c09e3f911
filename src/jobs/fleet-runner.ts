import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Queue, Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Config } from '../config.js';
import type { InferenceQueue } from '../inference/inference-queue.js';
import type { DrainState } from '../lifecycle/drain-state.js';
import type { ModelService } from '../model/model-service.js';
import type { ClaimedJobItem, JobRecord } from '../store/job-records.js';
import { bullmqConnection, WORKER_DRAIN_DELAY_SECONDS } from './bullmq-settings.js';
import { fleetPriority, PRIORITY_LIMIT } from './fleet-priority.js';
import type { JobWork } from './job-work.js';
import { ItemStop, runJobItem, type ItemRunParts } from './run-job-item.js';

/** What the fleet's worker needs of the process: the embedded runner's parts, and Redis. */
export interface FleetRunnerParts extends ItemRunParts {
  config: Pick<Config, 'dataDir' | 'requestTimeoutMs' | 'inferenceConcurrency' | 'jobQueue' | 'jobStalledMs'> & { redisUrl: string };
  queue: Pick<InferenceQueue, 'mayStartJob'>;
  model: Pick<ModelService, 'ready'>;
  drain?: Pick<DrainState, 'draining'>;
  /** The app's shared connection (`app.redis`): cancellations are published on it, and heard on a copy of it. */
  redis: Redis;
  /** Items worked on at once by this replica; default CUTOUT_INFERENCE_CONCURRENCY. */
  inFlight?: number;
  /** How often a replica whose model is busy looks at it again before it fetches, in ms; default 250. Nothing reaches Redis meanwhile. */
  pollMs?: number;
  /** Told of what recovery did: items BullMQ found stalled, items reconciliation added again (the metrics count them). */
  onRecovery?: (kind: RecoveryKind, items: number) => void;
}

/** What the fleet recovered: `stalled` (BullMQ's stalled check), `reconciled_queued` and `reconciled_running` (reconciliation from the store). */
export type RecoveryKind = 'stalled' | 'reconciled_queued' | 'reconciled_running';

/** One BullMQ job: one item of one Cutout job. */
interface ItemRef {
  jobId: string;
  index: number;
}

/** How long an item the server was in the way of waits before a replica takes it again. */
const RETRY_DELAY_MS = 1000;
/** Items added to BullMQ, or looked up in it, per round. */
const ADD_CHUNK = 500;
/**
 * A running item's holder is taken for dead when it has not heartbeaten for this many lock
 * periods (CUTOUT_JOB_STALLED_MS); it heartbeats every half period.
 */
const STALE_PERIODS = 2;
/**
 * BullMQ's own stalled limit, set where it never decides: an entry that stalls is put back to
 * wait every time, and the store's claim applies the one recovery rule (`MAX_ITEM_STARTS`).
 */
const BULLMQ_STALLED_LIMIT = 1_000_000;

/**
 * How long closing waits for BullMQ's worker to let go. Its blocking connection, closed
 * between two attempts to reconnect to a Redis that was away, never reports its end
 * (ioredis), and the worker's close would wait for it for ever: past this, the worker's
 * connections are dropped and closing goes on. Its items are given back before.
 */
const WORKER_CLOSE_WAIT_MS = 5000;

/** BullMQ refuses ':' in a custom job id: `<job id>.<index>` is one item, whichever replica adds it. */
export const itemJobId = (jobId: string, index: number): string => `${jobId}.${index}`;

/** An item this replica works on, with the BullMQ entry and lock token it came with. */
interface HeldItem {
  claim: ClaimedJobItem;
  controller: AbortController;
  entry: Job<ItemRef>;
  token: string;
}

/**
 * The jobs' runner across replicas (REDIS_URL set): every item of a job is one BullMQ job of
 * one shared queue, and the store stays the truth. Each replica fetches an entry by hand
 * (BullMQ's manual fetch, `Worker.getNextJob`) only while its own model could start it
 * (interactive requests first), claims the item in the store (`claimJobItemAt`, which keeps
 * the recovery rule), works on it as the embedded runner does (`runJobItem`) and ends it with
 * `finishJobItem`, which counts it in the usage for the claim that still holds it.
 *
 * While it works, the replica extends the entry's lock and writes the item's heartbeat in the
 * store. A replica that dies does neither: BullMQ's stalled check puts the entry back for
 * another replica, and reconciliation (`reconcile`, run by one replica at a time on a BullMQ
 * job scheduler: `fleet-upkeep.ts`) adds again every queued item BullMQ does not have and
 * every running item whose holder stopped heartbeating, so that a Redis that forgets costs a
 * delay, never an image. On SIGTERM the items in flight are handed back at once (not counted
 * as starts). A cancellation is published on Redis, so the replica working on an item of the
 * job stops it.
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
  readonly #items = new Map<string, HeldItem>();
  /** Entries this replica holds, from their fetch to their settling (claimed or not). */
  #entries = 0;
  #closed = false;
  #fetching: Promise<void> | undefined;
  #heartbeat: NodeJS.Timeout | undefined;
  #redisAway = false;

  constructor(parts: FleetRunnerParts) {
    this.#parts = parts;
    const { config, log } = parts;
    this.#concurrency = parts.inFlight ?? config.inferenceConcurrency;
    const connection = bullmqConnection(config.redisUrl);
    // An entry ends when its item does; the store keeps what happened to it.
    const defaultJobOptions = { removeOnComplete: true, removeOnFail: true };
    this.#queue = new Queue<ItemRef>(config.jobQueue, { connection, defaultJobOptions });
    this.#queue.on('error', (error) => log.debug({ err: error }, 'the jobs\' BullMQ queue lost Redis'));
    // No processor: entries are fetched by hand when the model may start one.
    this.#worker = new Worker<ItemRef>(config.jobQueue, null, {
      connection,
      autorun: false,
      drainDelay: WORKER_DRAIN_DELAY_SECONDS,
      lockDuration: config.jobStalledMs,
      stalledInterval: config.jobStalledMs,
      maxStalledCount: BULLMQ_STALLED_LIMIT,
    });
    this.#worker.on('error', (error) => this.#lostRedis(error));
    this.#worker.on('stalled', (entryId) => {
      log.warn({ entry: entryId }, 'a job image\'s replica stopped renewing its lock; BullMQ gave the image to the queue again');
      parts.onRecovery?.('stalled', 1);
    });
    this.#channel = `cutout:${config.jobQueue}:cancelled`;
    this.#subscriber = parts.redis.duplicate({ enableOfflineQueue: true });
    this.#subscriber.on('error', () => undefined);
    this.#subscriber.on('message', (_channel: string, jobId: string) => this.#stopLocally(jobId));
  }

  get inFlight(): number {
    return this.#items.size;
  }

  /**
   * Subscribes to cancellations, starts BullMQ's stalled check and the fetching loop. Items
   * that BullMQ lacks are added by reconciliation, not here: a replica's start is not when
   * the fleet learns of them.
   */
  async start(): Promise<void> {
    await this.#subscriber.subscribe(this.#channel).catch((error: unknown) => this.#parts.log.warn({ err: error }, 'cancellations cannot be heard from other replicas until Redis is back'));
    void this.#worker.startStalledCheckTimer().catch((error: unknown) => this.#lostRedis(error));
    this.#heartbeat = setInterval(() => void this.#beat(), this.#parts.config.jobStalledMs / 2);
    this.#heartbeat.unref();
    this.#fetching = this.#fetchLoop();
  }

  /**
   * Adds the job's items to the shared queue, each with a priority from its place among its
   * token's waiting items (`fleet-priority.ts`), and with the id `<job>.<index>` so that the
   * same item added twice is one BullMQ job. A failure here is mended by reconciliation.
   */
  async jobMade(job: Pick<JobRecord, 'id' | 'userTokenId' | 'itemCount'>): Promise<void> {
    try {
      const { queuedItems } = await this.#parts.store.openJobLoad(job.userTokenId);
      const ahead = Math.max(0, queuedItems - job.itemCount);
      await this.#add(job.id, Array.from({ length: job.itemCount }, (_, index) => index), ahead);
    } catch (error) {
      this.#parts.log.warn({ err: error, job: job.id }, 'a job\'s images could not be handed to the other replicas now; reconciliation adds them shortly');
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
   * Reconciliation: the store is the truth. Adds to BullMQ every `queued` item of an open job
   * that BullMQ has no entry for (a Redis that restarted empty, a crash between a job's insert
   * and its enqueue, an entry lost), and every `running` item whose holder stopped
   * heartbeating and whose entry is gone. Run by one replica at a time (`fleet-upkeep.ts`).
   */
  async reconcile(): Promise<Record<'queued' | 'running', number>> {
    const { store, log, config } = this.#parts;
    const staleBefore = new Date(Date.now() - STALE_PERIODS * config.jobStalledMs).toISOString();
    const added = { queued: 0, running: 0 };
    const ahead = new Map<string, number>();
    for (const job of await store.listOpenJobs()) {
      for (let after = -1; !this.#closed; ) {
        const indexes = await store.listQueuedJobItems(job.id, after, ADD_CHUNK);
        if (indexes.length === 0) break;
        const before = ahead.get(job.userTokenId) ?? 0;
        const missing = await this.#absent(job.id, indexes);
        await this.#add(job.id, missing, Math.min(before, PRIORITY_LIMIT));
        ahead.set(job.userTokenId, before + indexes.length);
        added.queued += missing.length;
        after = indexes[indexes.length - 1]!;
      }
    }
    for (const item of await store.listStaleJobItems(staleBefore)) {
      if ((await this.#absent(item.jobId, [item.index])).length === 0) continue;
      // Started already: it goes first among its token's items.
      await this.#add(item.jobId, [item.index], 0);
      added.running++;
    }
    if (added.queued + added.running > 0) {
      log.warn(added, 'job images the shared queue did not have were added again from the store');
      if (added.queued > 0) this.#parts.onRecovery?.('reconciled_queued', added.queued);
      if (added.running > 0) this.#parts.onRecovery?.('reconciled_running', added.running);
    }
    return added;
  }

  /**
   * Stops fetching and hands the items in flight back to the queue (in the store, and to
   * BullMQ for another replica), then waits for the worker to let go.
   */
  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#heartbeat);
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
    await this.#fetching;
    await this.#queue.close();
    await this.#subscriber.quit().catch(() => this.#subscriber.disconnect());
  }

  /** Whether this replica may start an item now: its model ready, idle or owing jobs their share, a place free, not draining. */
  #mayStart(): boolean {
    const { queue, model, drain } = this.#parts;
    return this.#entries < this.#concurrency && queue.mayStartJob(this.#entries) && model.ready && !drain?.draining;
  }

  /**
   * Fetches an entry whenever this replica may start one; while it may not, it looks again
   * after `pollMs` without asking Redis, and the entries wait there for a replica that may.
   * `getNextJob` blocks on Redis for a while when the queue is empty.
   */
  async #fetchLoop(): Promise<void> {
    while (!this.#closed) {
      if (!this.#mayStart()) {
        await sleep(this.#parts.pollMs ?? 250);
        continue;
      }
      const token = randomUUID();
      let entry: Job<ItemRef> | undefined;
      try {
        entry = await this.#worker.getNextJob(token);
        this.#redisAway = false;
      } catch (error) {
        // Closing ends the fetch under way with "Connection is closed".
        if (this.#closed) break;
        this.#lostRedis(error);
        await sleep(RETRY_DELAY_MS);
        continue;
      }
      if (!entry) continue;
      // The model may have been taken while the fetch waited: the entry goes back at once.
      if (!this.#mayStart()) {
        await this.#settle(entry.moveToWait(token), entry);
        continue;
      }
      this.#entries++;
      void this.#work(entry, token).finally(() => this.#entries--);
    }
  }

  async #work(entry: Job<ItemRef>, token: string): Promise<void> {
    const { store, log, config } = this.#parts;
    const { jobId, index } = entry.data;
    const now = new Date();
    let claim;
    try {
      claim = await store.claimJobItemAt(jobId, index, now.toISOString(), new Date(now.getTime() - STALE_PERIODS * config.jobStalledMs).toISOString());
    } catch {
      // The store is away: the item waits in BullMQ, not in this process.
      return this.#settle(entry.moveToDelayed(Date.now() + RETRY_DELAY_MS, token), entry);
    }
    // Its replica lost the entry's lock but still works on it: back when its heartbeat would be stale.
    if (claim?.kind === 'held') return this.#settle(entry.moveToDelayed(Date.parse(claim.heartbeatAt) + STALE_PERIODS * config.jobStalledMs + RETRY_DELAY_MS, token), entry);
    if (claim?.kind === 'gave_up') {
      log.warn({ job: jobId, item: index, starts: claim.starts }, 'a job image was started as often as it may be, its replica dying each time: failed with too_many_starts');
      this.#parts.onItemEnd?.('failed', 'too_many_starts');
    }
    // Finished, cancelled, gone or given up: nothing to do.
    if (claim?.kind !== 'claimed') return this.#settle(entry.moveToCompleted(undefined, token, false), entry);
    const key = itemJobId(jobId, index);
    const controller = new AbortController();
    this.#items.set(key, { claim: claim.item, controller, entry, token });
    try {
      const end = await runJobItem(this.#parts, claim.item, controller.signal);
      if (end === 'returned') await this.#settle(entry.moveToDelayed(Date.now() + RETRY_DELAY_MS, token), entry);
      else if (end === 'stopped') await this.#settle(entry.moveToWait(token), entry);
      else await this.#settle(entry.moveToCompleted(undefined, token, false), entry);
    } finally {
      this.#items.delete(key);
    }
  }

  /**
   * Every half lock period: extends the locks of the entries in flight and writes their items'
   * heartbeats. An item the store says this replica no longer holds (cancelled, or taken over
   * after this replica stalled) is stopped.
   */
  async #beat(): Promise<void> {
    const { store, config, log } = this.#parts;
    const at = new Date().toISOString();
    for (const held of [...this.#items.values()]) {
      void held.entry.extendLock(held.token, config.jobStalledMs).catch(() => undefined);
      try {
        if (!(await store.touchJobItem(held.claim, at))) held.controller.abort(new ItemStop('cancelled'));
      } catch (error) {
        log.debug({ err: error }, 'a job image\'s heartbeat could not be written');
      }
    }
  }

  /**
   * Waits for a BullMQ move. One that fails (Redis away, or it forgot the entry) changes
   * nothing that matters: the store holds the item's state, and reconciliation mends the queue.
   */
  async #settle(move: Promise<unknown>, entry: Job<ItemRef>): Promise<void> {
    try {
      await move;
    } catch (error) {
      this.#parts.log.debug({ err: error, entry: entry.id }, 'BullMQ could not move a job image\'s entry; reconciliation mends the queue');
    }
  }

  #lostRedis(error: unknown): void {
    if (this.#redisAway || this.#closed) return;
    this.#redisAway = true;
    this.#parts.log.warn({ err: error }, 'the jobs\' BullMQ worker cannot reach Redis; it tries again by itself');
  }

  #stopLocally(jobId: string): void {
    for (const { claim, controller } of this.#items.values()) if (claim.jobId === jobId) controller.abort(new ItemStop('cancelled'));
  }

  /** The indexes among `indexes` whose item BullMQ has no entry for. */
  async #absent(jobId: string, indexes: readonly number[]): Promise<number[]> {
    const states = await Promise.all(indexes.map((index) => this.#queue.getJobState(itemJobId(jobId, index))));
    return indexes.filter((_, at) => states[at] === 'unknown');
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
}
