import { CutoutApiError } from './cutout-api-error.js';
import type { HttpAnswer } from './http-attempt.js';
import { outputOptionFields, type OutputOptions } from './output-options.js';
import type { RetryOptions } from './retry-policy.js';

/** A job's status: `queued` until an image starts, `running`, then `done` or `cancelled`. */
export type JobStatus = 'queued' | 'running' | 'done' | 'cancelled';
/** One image's state in a job. */
export type JobItemState = 'queued' | 'running' | 'succeeded' | 'failed' | 'cancelled';

/** A job as the server describes it. */
export interface Job {
  id: string;
  status: JobStatus;
  createdAt: string;
  finishedAt: string | null;
  /** The job's images by state, and their total. */
  counts: Record<JobItemState | 'total', number>;
  /** The output options as sent. */
  options: Record<string, unknown>;
  webhookUrl: string | null;
  /** Where an unfinished job stands; null once it has ended. */
  progress: JobProgress | null;
}

/** An unfinished job's pace, its estimated end, and what the server gives jobs now. */
export interface JobProgress {
  /** Images that ended (succeeded or failed) a minute, over the last 5 minutes. */
  imagesPerMinute: number;
  /** When the job should end at that pace (ISO 8601); null until an image has ended in the window. */
  estimatedFinishAt: string | null;
  /**
   * `all_passes`: no request keeps the server's model busy, jobs take every pass;
   * `minimum_share`: requests keep it busy, jobs get their minimum share of the passes.
   */
  pace: 'all_passes' | 'minimum_share';
  /** The server's CUTOUT_JOB_MIN_SHARE: jobs get at least one pass in round(1 / share) while requests wait. */
  minimumShare: number;
}

/** One image of a job. */
export interface JobItem {
  index: number;
  /** The id the client gave the image, if any. */
  id: string | null;
  imageUrl: string | null;
  state: JobItemState;
  /** How many times it was started and its start counted (its server died with it); at 5 it fails with `too_many_starts`. */
  attempts: number;
  contentType: string | null;
  /** Why it failed: the code, status and detail the removal endpoints would answer for this image. */
  problem: { code: string; status: number; detail: string } | null;
}

/** A job with one page of its images. */
export interface JobPage extends Job {
  items: JobItem[];
  page: number;
  perPage: number;
  /** Whether another page follows. */
  more: boolean;
}

/** An image of a new job: its URL, or its URL and an id of the client's own (a SKU) that names its result. */
export type JobImage = string | { url: string; id?: string };

/** How a job call may take its time. */
export interface JobCallOptions {
  /** Aborting it stops the call at once; the call rejects with its reason. */
  signal?: AbortSignal;
  /** The longest one attempt may take, in ms (default: the client's). */
  timeout?: number;
  /** This call's retry policy, over the client's. */
  retry?: RetryOptions | false;
}

/** A new job's output options, and its idempotency key. */
export interface CreateJobOptions extends OutputOptions, JobCallOptions {
  /**
   * Sent as `Idempotency-Key`: the same key and images within 24 hours answer the same job.
   * Default: a new random key per call, so that the call's own retries never make two jobs.
   */
  idempotencyKey?: string;
  webhookUrl?: string;
}

/** One authorized request, retried by the client's policy; `ok` are the statuses that are not errors. */
export type AuthorizedCall = (
  request: { method: 'GET' | 'POST' | 'DELETE'; path: string; json?: unknown; form?: () => FormData; headers?: Record<string, string>; ok: readonly number[] },
  options: JobCallOptions,
) => Promise<HttpAnswer>;

interface JobJson {
  id: string;
  status: JobStatus;
  created_at: string;
  finished_at: string | null;
  counts: Job['counts'];
  options: Record<string, unknown>;
  webhook_url: string | null;
  progress?: { images_per_minute: number; estimated_finish_at: string | null; pace: JobProgress['pace']; minimum_share: number } | null;
  items?: { index: number; id: string | null; image_url: string | null; state: JobItemState; attempts?: number; content_type: string | null; problem: JobItem['problem'] }[];
  page?: number;
  per_page?: number;
  next_page?: string | null;
  /** A list's jobs (`GET /api/v1/jobs`). */
  jobs?: JobJson[];
}

const jobPath = (id: string) => `/api/v1/jobs/${encodeURIComponent(id)}`;

function readJson(answer: HttpAnswer): JobJson {
  try {
    return JSON.parse(new TextDecoder().decode(answer.body)) as JobJson;
  } catch (error) {
    throw new CutoutApiError({ status: answer.status, code: 'unexpected_response', detail: 'The server did not answer a job as JSON.' }, { cause: error });
  }
}

const toJob = (json: JobJson): Job => ({
  id: json.id,
  status: json.status,
  createdAt: json.created_at,
  finishedAt: json.finished_at,
  counts: json.counts,
  options: json.options,
  webhookUrl: json.webhook_url,
  progress: json.progress
    ? { imagesPerMinute: json.progress.images_per_minute, estimatedFinishAt: json.progress.estimated_finish_at, pace: json.progress.pace, minimumShare: json.progress.minimum_share }
    : null,
});

const sleep = (ms: number, signal: AbortSignal | undefined) =>
  new Promise<void>((resolve, reject) => {
    const timer = setTimeout(done, ms);
    function done() {
      signal?.removeEventListener('abort', abort);
      resolve();
    }
    function abort() {
      clearTimeout(timer);
      reject(signal?.reason);
    }
    signal?.addEventListener('abort', abort, { once: true });
  });

/**
 * Jobs: many images cut with the same options, answered at once and worked through by the
 * server with the time single removals leave. `client.jobs` of a {@link CutoutClient}.
 *
 * @example
 * const job = await cutout.jobs.create([{ url: 'https://shop.example/a.jpg', id: 'sku-1' }], { format: 'webp', crop: true });
 * const done = await cutout.jobs.wait(job.id);
 * await writeFile('cutouts.zip', await cutout.jobs.download(done.id));
 */
export class CutoutJobs {
  readonly #call: AuthorizedCall;

  constructor(call: AuthorizedCall) {
    this.#call = call;
  }

  /** Makes a job of image URLs (1 to 10,000) with the output options; resolves once the server has it. */
  async create(images: readonly JobImage[], options: CreateJobOptions = {}): Promise<Job> {
    const json = {
      ...outputOptionFields(options),
      images: images.map((image) => (typeof image === 'string' ? { image_url: image } : { image_url: image.url, ...(image.id !== undefined && { id: image.id }) })),
      ...(options.webhookUrl !== undefined && { webhook_url: options.webhookUrl }),
    };
    const key = options.idempotencyKey ?? globalThis.crypto.randomUUID();
    const answer = await this.#call({ method: 'POST', path: '/api/v1/jobs', json, headers: { 'idempotency-key': key }, ok: [202] }, options);
    return toJob(readJson(answer));
  }

  /**
   * Makes a job of images uploaded: each `{ name, data }` is one file (a zip archive of
   * images too, when its name ends in `.zip`); an image's id is its name without the
   * extension. A Blob from `fs.openAsBlob` is read from disk as it is sent.
   */
  async upload(files: readonly { name: string; data: Blob | Uint8Array }[], options: CreateJobOptions = {}): Promise<Job> {
    const fields = { ...outputOptionFields(options), ...(options.webhookUrl !== undefined && { webhook_url: options.webhookUrl }) };
    const blobs = files.map((file) => ({ name: file.name, blob: file.data instanceof Blob ? file.data : new Blob([file.data as BlobPart]) }));
    // A FormData is read as the request is sent, so each attempt gets its own.
    const form = () => {
      const body = new FormData();
      for (const [name, value] of Object.entries(fields)) body.append(name, String(value));
      for (const { name, blob } of blobs) body.append('files', blob, name);
      return body;
    };
    const key = options.idempotencyKey ?? globalThis.crypto.randomUUID();
    return toJob(readJson(await this.#call({ method: 'POST', path: '/api/v1/jobs/multipart', form, headers: { 'idempotency-key': key }, ok: [202] }, options)));
  }

  /** The account's recent jobs, newest first (`limit` up to 100, default 20), without their images. */
  async list(options: JobCallOptions & { limit?: number } = {}): Promise<Job[]> {
    const query = new URLSearchParams({ limit: String(options.limit ?? 20) });
    return (readJson(await this.#call({ method: 'GET', path: `/api/v1/jobs?${query}`, ok: [200] }, options)).jobs ?? []).map(toJob);
  }

  /** The job and one page of its images (`page` from 1, `perPage` up to 1000, default 100). */
  async get(id: string, options: JobCallOptions & { page?: number; perPage?: number } = {}): Promise<JobPage> {
    const query = new URLSearchParams({ page: String(options.page ?? 1), per_page: String(options.perPage ?? 100) });
    const json = readJson(await this.#call({ method: 'GET', path: `${jobPath(id)}?${query}`, ok: [200] }, options));
    return {
      ...toJob(json),
      items: (json.items ?? []).map((item) => ({ index: item.index, id: item.id, imageUrl: item.image_url, state: item.state, attempts: item.attempts ?? 0, contentType: item.content_type, problem: item.problem })),
      page: json.page ?? 1,
      perPage: json.per_page ?? 100,
      more: Boolean(json.next_page),
    };
  }

  /**
   * Polls the job every `intervalMs` (default 2000) until it is done or cancelled; `onProgress`
   * is given the job at each poll (its `counts` say how far it is), the last one included.
   */
  async wait(id: string, options: JobCallOptions & { intervalMs?: number; onProgress?: (job: Job) => void } = {}): Promise<Job> {
    for (;;) {
      const { items: _items, page: _page, perPage: _perPage, more: _more, ...job } = await this.get(id, { ...options, perPage: 1 });
      options.onProgress?.(job);
      if (job.status === 'done' || job.status === 'cancelled') return job;
      await sleep(options.intervalMs ?? 2000, options.signal);
    }
  }

  /** One image's result: its bytes and type. Rejects with `result_not_available` while it waits, or when it failed. */
  async item(id: string, index: number, options: JobCallOptions = {}): Promise<{ bytes: Uint8Array; contentType: string }> {
    const answer = await this.#call({ method: 'GET', path: `${jobPath(id)}/items/${index}`, ok: [200] }, options);
    return { bytes: answer.body, contentType: answer.headers.get('content-type') ?? 'application/octet-stream' };
  }

  /** Every finished result in one zip archive, each named after its image's id (else its index). */
  async download(id: string, options: JobCallOptions = {}): Promise<Uint8Array> {
    return (await this.#call({ method: 'GET', path: `${jobPath(id)}/results`, ok: [200] }, options)).body;
  }

  /** Cancels the job; the results finished before stay downloadable. */
  async cancel(id: string, options: JobCallOptions = {}): Promise<Job> {
    return toJob(readJson(await this.#call({ method: 'DELETE', path: jobPath(id), ok: [200] }, options)));
  }
}
