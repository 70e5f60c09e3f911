import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { FastifyRequest } from 'fastify';
import type { Config } from '../config.js';
import type { InferenceQueue } from '../inference/inference-queue.js';
import { CutoutError } from '../errors.js';
import type { JobCounts, JobRecord, NewJobItem } from '../store/job-records.js';
import type { Store } from '../store/store.js';
import { takeOptions } from '../api/option-schemas.js';
import type { JobList } from './job-request.js';
import { newJobId } from './job-ids.js';
import { checkWebhookUrl, type WebhookAddressRules } from './webhook-address.js';
import type { JobWork } from './job-work.js';
import { readJobUpload } from './job-upload.js';
import { jobSummary, PACE_WINDOW_MINUTES, type JobProgress } from './job-view.js';
import { jobFolder, resultFileName } from './result-files.js';
import type { ZipEntry } from './results-zip.js';

/** How long an Idempotency-Key answers with the job it made. */
const IDEMPOTENCY_WINDOW_MS = 24 * 3600 * 1000;
/** What a client over its caps is asked to wait: about what a few items take on a busy server. */
const CAPS_RETRY_AFTER_SECONDS = 30;
/** Items read from the store at once while a zip of results is made. */
const ZIP_PAGE = 1000;

/** A job about to be made: its images, its options as sent and the hash of the request. */
export interface JobDraft {
  id: string;
  options: Record<string, unknown>;
  hash: string;
  items: NewJobItem[];
  webhookUrl: string | null;
}

/** A job just made (or made before, for a retry), with its counts read before the runner was woken. */
export interface MadeJob {
  job: JobRecord;
  counts: JobCounts;
}

export interface JobServiceDeps {
  config: Config;
  store: Store;
  runner: JobWork;
  /** The address rules a job's `webhook_url` is held to (those of image URLs). */
  webhookRules: WebhookAddressRules;
  /** The model's queue, for what it gives jobs now (`progress.pace`). */
  queue: Pick<InferenceQueue, 'requestsWithin' | 'jobShare'>;
}

/** Requests keep the model busy when one of theirs ended within this long. */
const BUSY_WITHIN_MS = 10_000;

/**
 * What every way of making and following a job shares: the API's routes (`job-routes.ts`,
 * with a managed token) and the dashboard's Batch page (with a session) call these, so a job
 * is checked, capped, made and woken in one place whoever asks. `userTokenId` is the user
 * token the job belongs to; the callers have checked that the requester may use it.
 *
 * @example const { job, counts } = await app.jobs.service.makeFromList(token.userTokenId, key, body, request.jobBody!)
 */
export class JobService {
  constructor(private readonly deps: JobServiceDeps) {}

  /** The JSON of a job, with its counts (read now unless given) and, while unfinished, its progress. */
  async summaryOf(job: JobRecord, counts?: JobCounts) {
    const known = counts ?? (await this.deps.store.countJobItems(job.id));
    return jobSummary(job, known, job.status === 'queued' || job.status === 'running' ? await this.progressOf(job, known) : null);
  }

  /** An unfinished job's pace over the last minutes, its estimated end at that pace, and what the model gives jobs now. */
  async progressOf(job: JobRecord, counts: JobCounts): Promise<JobProgress> {
    const { store, queue } = this.deps;
    const now = Date.now();
    const ended = await store.countJobItemsEndedSince(job.id, new Date(now - PACE_WINDOW_MINUTES * 60_000).toISOString());
    const perMinute = ended / PACE_WINDOW_MINUTES;
    const left = counts.queued + counts.running;
    return {
      images_per_minute: Math.round(perMinute * 10) / 10,
      estimated_finish_at: perMinute > 0 ? new Date(now + (left / perMinute) * 60_000).toISOString() : null,
      pace: queue.requestsWithin(BUSY_WITHIN_MS) ? 'minimum_share' : 'all_passes',
      minimum_share: queue.jobShare,
    };
  }

  /**
   * Makes the job of a JSON list of image URLs (`JobBody`, its options already taken out by
   * `readJobJson`), or answers the one its Idempotency-Key made.
   */
  async makeFromList(userTokenId: string, key: string | null, body: JobList, taken: { options: Record<string, unknown>; hash: string }): Promise<MadeJob> {
    const items = body.images.map((image) => ({ imageUrl: image.image_url, clientId: image.id ?? null }));
    return this.make(userTokenId, key, { id: newJobId(), options: taken.options, hash: taken.hash, items, webhookUrl: body.webhook_url ?? null });
  }

  /**
   * Makes the job of a `multipart/form-data` upload (`readJobUpload`: files and zips, the
   * options as fields), or answers the one its Idempotency-Key made. The upload's files are
   * deleted when it is refused, or when a retry is answered with the job made before.
   */
  async makeFromUpload(request: FastifyRequest, userTokenId: string, key: string | null): Promise<MadeJob> {
    const { config } = this.deps;
    if (!request.isMultipart()) throw new CutoutError('unsupported_media_type', 'Send multipart/form-data with image files or a zip archive of images.');
    const id = newJobId();
    const folder = join(config.dataDir, jobFolder(id));
    try {
      await this.refuseOverOpenJobs(userTokenId);
      const upload = await readJobUpload(request, config.dataDir, id, { maxImageBytes: config.maxImageBytes, maxUploadBytes: config.jobMaxUploadBytes });
      const options = { ...takeOptions(upload.fields).sent };
      if (upload.fields.webhook_url && !/^https?:\/\//.test(upload.fields.webhook_url)) throw new CutoutError('invalid_request', 'webhook_url must be an http(s) URL.');
      if (upload.fields.webhook_url && upload.fields.webhook_url.length > 2048) throw new CutoutError('invalid_request', 'webhook_url may have at most 2048 characters.');
      const made = await this.make(userTokenId, key, { id, options, hash: upload.hash, items: upload.items, webhookUrl: upload.fields.webhook_url || null });
      // A retry answered with the job its key made first: this upload's copy is not needed.
      if (made.job.id !== id) await rm(folder, { recursive: true, force: true });
      return made;
    } catch (error) {
      await rm(folder, { recursive: true, force: true });
      throw error;
    }
  }

  /**
   * Makes a job, or answers the one its Idempotency-Key made: the one way every job request
   * ends, with the token's caps checked and the runner told of the job.
   */
  async make(userTokenId: string, key: string | null, draft: JobDraft): Promise<MadeJob> {
    const { config, store, runner } = this.deps;
    const counted = async (job: JobRecord): Promise<MadeJob> => ({ job, counts: await store.countJobItems(job.id) });
    const earlier = key && (await this.replayed(userTokenId, key, draft.hash));
    if (earlier) return counted(earlier);
    // Never a webhook signed with a secret nobody was shown: the token makes its secret first.
    if (draft.webhookUrl && !(await store.hasWebhookSecret(userTokenId))) throw new CutoutError('webhook_secret_missing');
    if (draft.webhookUrl) await checkWebhookUrl(draft.webhookUrl, this.deps.webhookRules);

    const count = draft.items.length;
    if (count > config.jobMaxQueuedItems) {
      throw new CutoutError('invalid_request', `A job may hold at most ${config.jobMaxQueuedItems} images on this server (CUTOUT_JOB_MAX_QUEUED_ITEMS).`);
    }
    const job = { id: draft.id, userTokenId, options: draft.options, createdAt: new Date().toISOString(), webhookUrl: draft.webhookUrl, idempotencyKey: key, bodyHash: draft.hash };
    let creation;
    try {
      creation = await store.createJob(job, draft.items, { maxOpenJobs: config.jobMaxOpen, maxQueuedItems: config.jobMaxQueuedItems });
    } catch (error) {
      // The same key sent twice at once: the other request made the job.
      const other = key && (await this.replayed(userTokenId, key, draft.hash));
      if (other) return counted(other);
      throw error;
    }
    if (!creation.made) {
      if (creation.openJobs >= config.jobMaxOpen) throw overOpenJobs(creation.openJobs);
      throw new CutoutError('too_many_jobs', `This token has ${creation.queuedItems} images waiting; with ${count} more it would pass ${config.jobMaxQueuedItems}.`, capsRetry);
    }
    // Read before the runner is told, so that the answer shows the job as made; the answer
    // does not wait for the runner (across replicas, it hands every image to BullMQ; it never throws).
    const stored = (await store.findJob(job.id, userTokenId))!;
    const made = await counted(stored);
    void runner.jobMade(stored);
    return made;
  }

  /** Cancels a job's waiting and running items; a finished job stays as it was. Answers the job as it is now. */
  async cancel(job: JobRecord): Promise<JobRecord> {
    const { store, runner } = this.deps;
    if (await store.cancelJob(job.id, new Date().toISOString())) await runner.cancel(job.id);
    return (await store.findJob(job.id, job.userTokenId))!;
  }

  /** The files of a zip of every result of the job finished so far, named for the client, read page by page. */
  async *finishedResults(job: JobRecord): AsyncGenerator<ZipEntry> {
    const { config, store } = this.deps;
    for (let offset = 0; offset < job.itemCount; offset += ZIP_PAGE) {
      for (const item of await store.listJobItems(job.id, offset, ZIP_PAGE)) {
        if (item.state === 'succeeded' && item.resultPath) yield { name: resultFileName(item.clientId, item.index, item.resultPath), path: join(config.dataDir, item.resultPath) };
      }
    }
  }

  /**
   * Refuses with 429 a token that has as many open jobs as it may, before an upload is read;
   * the caps that hold are checked again where the job is made, in its transaction.
   */
  async refuseOverOpenJobs(userTokenId: string): Promise<void> {
    const { config, store } = this.deps;
    const load = await store.openJobLoad(userTokenId);
    if (load.openJobs >= config.jobMaxOpen) throw overOpenJobs(load.openJobs);
  }

  /** The job a request's Idempotency-Key made already, or undefined when the key is free. */
  private async replayed(userTokenId: string, key: string, hash: string): Promise<JobRecord | undefined> {
    const { store } = this.deps;
    const earlier = await store.findJobByIdempotencyKey(userTokenId, key);
    if (!earlier) return undefined;
    if (Date.now() - Date.parse(earlier.createdAt) > IDEMPOTENCY_WINDOW_MS) {
      await store.releaseIdempotencyKey(earlier.id);
      return undefined;
    }
    if (earlier.bodyHash !== hash) throw new CutoutError('idempotency_key_reused', `The Idempotency-Key ${key} made job ${earlier.id} from a different body; use a new key for a new job.`);
    return earlier;
  }
}

const capsRetry = { headers: { 'retry-after': String(CAPS_RETRY_AFTER_SECONDS) } };

const overOpenJobs = (openJobs: number) =>
  new CutoutError('too_many_jobs', `This token has ${openJobs} unfinished jobs, as many as it may have; retry when one is done.`, capsRetry);
