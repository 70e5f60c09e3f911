import type { JobRecord } from '../store/job-records.js';

/**
 * Whatever works through the jobs' items: the embedded runner on one node
 * (`job-runner.ts`), or the BullMQ worker when REDIS_URL is set (`fleet-runner.ts`). The
 * routes and the plugin see only this, so the choice is made once, in `jobs-plugin.ts`.
 */
export interface JobWork {
  /** Starts working (once the app is ready). */
  start(): Promise<void>;
  /**
   * A job was stored with its items `queued`: the embedded runner looks for it at once, the
   * fleet adds its items to the shared queue. Never throws: a job that could not be handed
   * on is picked up later from the store.
   */
  jobMade(job: Pick<JobRecord, 'id' | 'userTokenId' | 'itemCount'>): Promise<void>;
  /** The store has marked the job cancelled: stop its items in flight, wherever they run. */
  cancel(jobId: string): Promise<void>;
  /** Stops taking items; those in flight go back to the queue for another runner. */
  close(): Promise<void>;
  /** Items being worked on in this process now. */
  readonly inFlight: number;
  /** Items waiting to be started, for the `cutout_job_items_queued` gauge. */
  queuedItems(): Promise<number>;
}
