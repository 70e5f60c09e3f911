import type { JobService } from '../jobs/job-service.js';
import { progressText } from '../jobs/progress-text.js';
import type { JobCounts, JobRecord } from '../store/job-records.js';

/** Where the Batch page finds a job: the dashboard's own routes, which take the session, not a token. */
export const batchJobUrl = (jobId: string): string => `/dashboard/batch/jobs/${jobId}`;

/**
 * A job as the Batch page sees it: the API's summary (`jobSummary`), with the dashboard's
 * URLs in place of the API's, the user token it counts against, and its progress in words
 * (`progress-text.ts`, as `cutout jobs show` prints it).
 */
export type BatchJob = Awaited<ReturnType<JobService['summaryOf']>> & { user_token_id: string; progress_text: string | null };

/**
 * The Batch page's JSON of a job, with its counts (read now unless given).
 *
 * @example reply.send(await batchJob(app.jobs.service, job))
 */
export async function batchJob(service: JobService, job: JobRecord, counts?: JobCounts): Promise<BatchJob> {
  const summary = await service.summaryOf(job, counts);
  const { progress } = summary;
  const progress_text = progress
    ? progressText({ imagesPerMinute: progress.images_per_minute, estimatedFinishAt: progress.estimated_finish_at, pace: progress.pace, minimumShare: progress.minimum_share })
    : null;
  return { ...summary, status_url: batchJobUrl(job.id), results_url: `${batchJobUrl(job.id)}/results`, user_token_id: job.userTokenId, progress_text };
}
