import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { FastifyBaseLogger } from 'fastify';
import type { Store } from '../store/store.js';
import { jobFolder } from './result-files.js';

export interface JobSweeperParts {
  store: Store;
  dataDir: string;
  /** CUTOUT_JOB_RETENTION: seconds a finished job is kept. */
  retentionSeconds: number;
  log: FastifyBaseLogger;
  now?: () => Date;
}

/** How often the sweeper runs for a retention of `retentionSeconds`: a tenth of it, at most every ten minutes. */
export const sweepEveryMs = (retentionSeconds: number): number => Math.min(600_000, (retentionSeconds * 1000) / 10);

/**
 * Deletes the jobs that finished more than the retention ago, their results first and then
 * their rows: a sweep cut short leaves rows whose files are gone, which the next sweep
 * deletes, never files no row leads to. On one node it sweeps on its own timer (`start`);
 * across replicas a BullMQ job scheduler calls `sweep` on one replica at a time (`fleet-upkeep.ts`).
 *
 * @example const sweeper = new JobSweeper(parts); sweeper.start()
 */
export class JobSweeper {
  readonly #parts: JobSweeperParts;
  #timer: NodeJS.Timeout | undefined;
  #sweeping: Promise<number> | undefined;

  constructor(parts: JobSweeperParts) {
    this.#parts = parts;
  }

  /** Sweeps now and then every tenth of the retention (at most every ten minutes). */
  start(): void {
    void this.sweep();
    this.#timer = setInterval(() => void this.sweep(), sweepEveryMs(this.#parts.retentionSeconds));
    this.#timer.unref();
  }

  /** Deletes the expired jobs as of `at` (default now); returns how many. */
  sweep(at: Date = (this.#parts.now ?? (() => new Date()))()): Promise<number> {
    this.#sweeping ??= this.#sweep(at).finally(() => (this.#sweeping = undefined));
    return this.#sweeping;
  }

  async close(): Promise<void> {
    clearInterval(this.#timer);
    await this.#sweeping;
  }

  async #sweep(at: Date): Promise<number> {
    const { store, dataDir, retentionSeconds, log } = this.#parts;
    try {
      const expired = await store.listJobsFinishedBefore(new Date(at.getTime() - retentionSeconds * 1000).toISOString());
      for (const jobId of expired) {
        await rm(join(dataDir, jobFolder(jobId)), { recursive: true, force: true });
        await store.deleteJob(jobId);
      }
      if (expired.length > 0) log.info({ jobs: expired.length }, 'expired jobs and their results deleted');
      return expired.length;
    } catch (error) {
      log.warn({ err: error }, 'expired jobs could not be deleted; trying again at the next sweep');
      return 0;
    }
  }
}
