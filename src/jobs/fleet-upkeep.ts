import { setTimeout as sleep } from 'node:timers/promises';
import { Queue, Worker } from 'bullmq';
import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../config.js';
import { bullmqConnection, WORKER_DRAIN_DELAY_SECONDS } from './bullmq-settings.js';
import type { FleetRunner } from './fleet-runner.js';
import { sweepEveryMs, type JobSweeper } from './job-sweeper.js';

export interface FleetUpkeepParts {
  config: Pick<Config, 'jobQueue' | 'jobRetention' | 'jobReconcileMs'> & { redisUrl: string };
  runner: Pick<FleetRunner, 'reconcile'>;
  sweeper: Pick<JobSweeper, 'sweep'>;
  log: FastifyBaseLogger;
}
/** How long closing waits for the upkeep's worker (see `fleet-runner.ts` for why it may not end). */
const WORKER_CLOSE_WAIT_MS = 5000;

type UpkeepTask = 'reconcile' | 'sweep';

/**
 * The fleet's scheduled upkeep, one replica at a time: reconciliation of the shared queue with
 * the store (`FleetRunner.reconcile`) and the sweep of expired jobs (`JobSweeper.sweep`), each
 * a BullMQ job scheduler on a queue of their own (`<CUTOUT_JOB_QUEUE>-upkeep`; reconciliation
 * every CUTOUT_JOB_RECONCILE_MS). Every replica
 * runs a worker over it; BullMQ gives each scheduled run to one of them.
 *
 * A Redis that restarted empty has forgotten the schedulers too: every replica looks for them
 * once a reconciliation period and declares those that are missing (`upsertJobScheduler` is
 * idempotent), so the first run after a flush is at most a period away.
 *
 * @example const upkeep = new FleetUpkeep({ config, runner, sweeper, log }); await upkeep.start()
 */
export class FleetUpkeep {
  readonly #parts: FleetUpkeepParts;
  readonly #queue: Queue;
  readonly #worker: Worker;
  readonly #schedules: ReadonlyMap<UpkeepTask, number>;
  #timer: NodeJS.Timeout | undefined;
  #redisAway = false;

  constructor(parts: FleetUpkeepParts) {
    this.#parts = parts;
    const { config, log } = parts;
    const connection = bullmqConnection(config.redisUrl);
    const name = `${config.jobQueue}-upkeep`;
    this.#schedules = new Map([
      ['reconcile', config.jobReconcileMs],
      ['sweep', sweepEveryMs(config.jobRetention)],
    ]);
    this.#queue = new Queue(name, { connection, defaultJobOptions: { removeOnComplete: true, removeOnFail: true } });
    this.#queue.on('error', (error) => log.debug({ err: error }, 'the jobs\' upkeep queue lost Redis'));
    this.#worker = new Worker(name, (job) => this.#run(job.name as UpkeepTask), { connection, autorun: false, drainDelay: WORKER_DRAIN_DELAY_SECONDS });
    this.#worker.on('error', (error) => this.#lostRedis(error));
    this.#worker.on('failed', (job, error) => log.warn({ err: error, task: job?.name }, 'a scheduled jobs upkeep failed; it runs again at its next time'));
  }

  /** Declares the schedulers that are missing, starts the worker, and looks for them again every reconciliation period. */
  async start(): Promise<void> {
    await this.#declare();
    this.#timer = setInterval(() => void this.#declare(), this.#schedules.get('reconcile'));
    this.#timer.unref();
    void this.#worker.run().catch((error: unknown) => this.#parts.log.error({ err: error }, 'the jobs\' upkeep worker stopped'));
  }

  async close(): Promise<void> {
    clearInterval(this.#timer);
    const waited = new AbortController();
    const closed = await Promise.race([
      this.#worker.close().then(() => true),
      sleep(WORKER_CLOSE_WAIT_MS, false, { signal: waited.signal }).catch(() => false),
    ]);
    waited.abort();
    if (!closed) void this.#worker.disconnect().catch(() => undefined);
    await this.#queue.close();
  }

  async #declare(): Promise<void> {
    try {
      for (const [task, every] of this.#schedules) {
        if (await this.#queue.getJobScheduler(task)) continue;
        await this.#queue.upsertJobScheduler(task, { every }, { name: task });
        this.#parts.log.info({ task, every_ms: every }, 'jobs upkeep scheduled');
      }
      this.#redisAway = false;
    } catch (error) {
      this.#lostRedis(error);
    }
  }

  async #run(task: UpkeepTask): Promise<unknown> {
    if (task === 'reconcile') return this.#parts.runner.reconcile();
    return this.#parts.sweeper.sweep();
  }

  #lostRedis(error: unknown): void {
    if (this.#redisAway) return;
    this.#redisAway = true;
    this.#parts.log.warn({ err: error }, 'the jobs\' upkeep cannot reach Redis; it tries again by itself');
  }
}
