import Type, { type Static } from 'typebox';
import { ERRORS, type ErrorCode } from '../errors.js';
import type { JobCounts, JobItemRecord, JobRecord } from '../store/job-records.js';
import type { WebhookDeliveryRecord } from '../store/webhook-records.js';

/** A job's own URL, relative to the server. */
export const jobUrl = (jobId: string): string => `/api/v1/jobs/${jobId}`;

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) => Type.Union([schema, Type.Null()]);

const Counts = Type.Object(
  {
    total: Type.Integer(),
    queued: Type.Integer(),
    running: Type.Integer(),
    succeeded: Type.Integer(),
    failed: Type.Integer(),
    cancelled: Type.Integer(),
  },
  { description: "The job's items by state." },
);

/** How long a window a job's pace is measured over, in minutes. */
export const PACE_WINDOW_MINUTES = 5;

const Progress = Type.Object(
  {
    images_per_minute: Type.Number({ description: `Images that ended (succeeded or failed) a minute, over the last ${PACE_WINDOW_MINUTES} minutes.` }),
    estimated_finish_at: Nullable(Type.String({ description: 'When the job should end at that pace; null until an image has ended in the window.' })),
    pace: Type.Union([Type.Literal('all_passes'), Type.Literal('minimum_share')], {
      description:
        "What the server answering gives jobs now: `all_passes` (no request keeps its model busy: jobs take every pass) or `minimum_share` (requests keep it busy: jobs get their minimum share, CUTOUT_JOB_MIN_SHARE, one pass in round(1 / share)).",
    }),
    minimum_share: Type.Number({ description: "The server's CUTOUT_JOB_MIN_SHARE." }),
  },
  { description: 'Where an unfinished job stands; null once it has ended.' },
);

/** An unfinished job's progress, as `Progress` describes it. */
export type JobProgress = Static<typeof Progress>;

/** The answer to a job's creation, and the head of every job answer. */
export const JobSummary = Type.Object({
  id: Type.String({ description: 'The job\'s id: random, and the only way to it.' }),
  status: Type.Union([Type.Literal('queued'), Type.Literal('running'), Type.Literal('done'), Type.Literal('cancelled')]),
  created_at: Type.String(),
  finished_at: Nullable(Type.String()),
  status_url: Type.String({ description: 'GET it for the status, the counts and the items.' }),
  results_url: Type.String({ description: 'GET it for every finished result in one zip.' }),
  counts: Counts,
  options: Type.Object({}, { additionalProperties: true, description: 'The output options as sent.' }),
  webhook_url: Nullable(Type.String()),
  progress: Nullable(Progress),
});

const ItemView = Type.Object({
  index: Type.Integer({ description: '0-based, in the order of `images`.' }),
  id: Nullable(Type.String({ description: "The client's `id` for the image, if it gave one." })),
  image_url: Nullable(Type.String({ description: 'Null for an uploaded image.' })),
  state: Type.Union([Type.Literal('queued'), Type.Literal('running'), Type.Literal('succeeded'), Type.Literal('failed'), Type.Literal('cancelled')]),
  attempts: Type.Integer({
    description:
      'How many times the image was started and its start counted: a start whose server died counts, one handed back on a stop (SIGTERM) or a busy model does not. At 5, the image fails with `too_many_starts`.',
  }),
  result_url: Nullable(Type.String({ description: 'Where the result is, once succeeded.' })),
  content_type: Nullable(Type.String()),
  problem: Nullable(
    Type.Object(
      { code: Type.String(), status: Type.Integer(), detail: Type.String() },
      { description: 'Why it failed: the code, status and detail the removal endpoints would answer for this image.' },
    ),
  ),
});

const WebhookView = Type.Object(
  {
    url: Type.String(),
    state: Type.Union([Type.Literal('waiting'), Type.Literal('pending'), Type.Literal('delivering'), Type.Literal('delivered'), Type.Literal('failed')], {
      description: '`waiting` until the job ends; then `pending` (an attempt is due at `next_attempt_at`), `delivering`, `delivered` (a 2xx came back) or `failed` (none within 24 hours).',
    }),
    attempts: Type.Array(
      Type.Object({
        attempt: Type.Integer({ description: 'From 1.' }),
        at: Type.String(),
        status: Nullable(Type.Integer({ description: "The receiver's HTTP status; null when none came." })),
        error: Type.Optional(Type.String({ description: 'Why no status came: a refused address, a connection error, the 10 s deadline.' })),
        duration_ms: Type.Integer(),
      }),
    ),
    next_attempt_at: Nullable(Type.String()),
  },
  { description: "The job's webhook, once it has a webhook_url; its attempts, oldest first." },
);

/** A job with one page of its items. */
export const JobPage = Type.Object({
  ...JobSummary.properties,
  webhook: Nullable(WebhookView),
  items: Type.Array(ItemView),
  page: Type.Integer(),
  per_page: Type.Integer(),
  next_page: Nullable(Type.String({ description: 'The next page of items, or null on the last.' })),
});

/** The JSON of a job, with its counts and, while it is unfinished, its progress. */
export function jobSummary(job: JobRecord, counts: JobCounts, progress: JobProgress | null = null) {
  return {
    id: job.id,
    status: job.status,
    created_at: job.createdAt,
    finished_at: job.finishedAt,
    status_url: jobUrl(job.id),
    results_url: `${jobUrl(job.id)}/results`,
    counts: { total: job.itemCount, ...counts },
    options: job.options,
    webhook_url: job.webhookUrl,
    progress,
  };
}

/** The JSON of one item. */
export function itemView(jobId: string, item: JobItemRecord) {
  const code = item.problemCode as ErrorCode | null;
  return {
    index: item.index,
    id: item.clientId,
    image_url: item.imageUrl,
    state: item.state,
    attempts: item.attempts,
    result_url: item.state === 'succeeded' ? `${jobUrl(jobId)}/items/${item.index}` : null,
    content_type: item.state === 'succeeded' ? item.contentType : null,
    problem: code ? { code, status: ERRORS[code]?.status ?? 500, detail: item.problemDetail ?? '' } : null,
  };
}

/** The JSON of a job's webhook delivery, or null for a job without a webhook_url. */
export function webhookView(job: JobRecord, delivery: WebhookDeliveryRecord | undefined) {
  if (!job.webhookUrl || !delivery) return null;
  return {
    url: job.webhookUrl,
    state: delivery.state ?? ('waiting' as const),
    attempts: delivery.attempts.map((attempt) => ({
      attempt: attempt.attempt,
      at: attempt.at,
      status: attempt.status,
      ...(attempt.error === null ? {} : { error: attempt.error }),
      duration_ms: attempt.durationMs,
    })),
    next_attempt_at: delivery.nextAttemptAt,
  };
}
