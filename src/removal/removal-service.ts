import type { FastifyReply } from 'fastify';
import type { Config } from '../config.js';
import { CutoutError } from '../errors.js';
import type { InferenceQueue } from '../inference/inference-queue.js';
import type { ModelService } from '../model/model-service.js';
import { checkUrlLiterally, fetchImage } from '../fetch/fetch-image.js';
import { untilAborted } from '../until-aborted.js';
import type { AnswerSpec, RequestedFormat } from '../pipeline/answer-spec.js';
import type { Finisher } from '../pipeline/finish-thread.js';
import { HeicThread } from '../pipeline/heic-thread.js';
import { headerSize } from '../pipeline/decode.js';
import { removeBackground, type RemovedBackground } from '../pipeline/remove-background.js';
import { NO_OPTIONS, type OutputOptions } from '../options/output-options.js';
import { MemoryBudget, Reservations } from './memory-budget.js';
import { backgroundDecodeBytes, estimateRemovalBytes } from './memory-estimate.js';
import { WorkTimes } from './work-times.js';

/** What a request chose about its removal; the server's configuration decides the rest. */
export interface RemovalRequest {
  /** The request's output options (`src/options/`); default none. */
  options?: OutputOptions;
  /** The answer's format: the options' own, or the one the Accept header chose; default PNG. */
  format?: RequestedFormat;
  /** The answer will be sent as Base64 inside JSON, a second copy of its bytes (for the memory estimate); default false. */
  base64Answer?: boolean;
  /**
   * A background image got by the route itself instead of `bgImageUrl`: remove.bg's
   * `bg_image_file` (the bytes, which errors name so), or a URL it fetches (a promise,
   * named `bg_image_url`).
   */
  backgroundImage?: Uint8Array | Promise<Uint8Array>;
  /**
   * When the answer is due, a `performance.now()` time (a request's: CUTOUT_REQUEST_TIMEOUT_MS
   * after its arrival, `replyTerms`; a job item's: as long from its start). The removal waits
   * for memory only while it could still finish by then; absent, as long as its signal lets it.
   */
  deadline?: number;
  /**
   * The removal is an image of a batch job: it takes the model's passes kept for jobs
   * (CUTOUT_JOB_MIN_SHARE, `InferenceQueue.jobSlot`) rather than a place among requests.
   */
  forJob?: boolean;
  /**
   * Keeps the removal's memory until its answer is sent: called, once the removal has its
   * result, with what releases it. Absent: released when `remove` returns.
   */
  holdUntilSent?: (release: () => void) => void;
}

/**
 * A removal's result: the pipeline's answer and the model that cut; its timings begin with
 * the two waits before the pipeline: for memory (the budget) and an HEIC's decode.
 */
export type RemovalResult = RemovedBackground & { model: string; timings: { memory: number; heic: number } };

/**
 * Runs a removal for an HTTP request, for every route that offers one (the API's three
 * endpoints and the dashboard's try-it): the capacity check before the body is read, the
 * request's deadline and disconnection, and the pipeline through the process's one inference
 * queue and finish threads. Decorated once on the app as `app.removals`.
 *
 * @example
 * app.addHook('onRequest', async () => app.removals.assertCapacity())
 * const { bytes } = await app.removals.remove(image, app.removals.signalFor(reply), { options, ...app.removals.replyTerms(reply) })
 */
export class RemovalService {
  readonly #config: Config;
  readonly #model: ModelService;
  readonly #queue: InferenceQueue;
  readonly #finisher: Finisher;
  readonly #heic: HeicThread;
  readonly #budget: MemoryBudget;
  /** How long removals take once they hold their memory: how long a request may wait for it. */
  readonly #workTimes = new WorkTimes();

  /**
   * `heic`: the thread that reads HEIC/HEIF photos; `budget`: the memory the removals share
   * (CUTOUT_MEMORY_BUDGET); default, each one of the service's own.
   */
  constructor(parts: { config: Config; model: ModelService; queue: InferenceQueue; finisher: Finisher; heic?: HeicThread; budget?: MemoryBudget }) {
    this.#config = parts.config;
    this.#model = parts.model;
    this.#queue = parts.queue;
    this.#finisher = parts.finisher;
    this.#heic = parts.heic ?? new HeicThread();
    this.#budget = parts.budget ?? new MemoryBudget(parts.config.memoryBudget, { maxWaiting: parts.config.queueMax, retryAfterSeconds: () => parts.queue.retryAfterSeconds() });
  }

  /** The memory budget's state: bytes reserved by removals in flight, removals waiting for memory, the budget. */
  get memory(): { reserved: number; waiting: number; total: number } {
    return { reserved: this.#budget.reserved, waiting: this.#budget.waiting, total: this.#budget.total };
  }

  /**
   * Refuses at once, before the body is read, when the model is not loaded, its queue is
   * full, or as many requests as the queue holds already wait for memory.
   */
  assertCapacity(): void {
    void this.#model.segmenter; // throws not_ready while the model loads
    if (this.#queue.full) throw this.#queue.fullError();
    // One arriving while others wait for memory would wait too: the budget's one rule.
    if (this.#budget.waiting > 0) this.#budget.assertRoomToWait();
  }

  /**
   * The signal a request's work listens to: it aborts when the client goes away before the
   * answer is sent, or when the request's deadline (CUTOUT_REQUEST_TIMEOUT_MS, counted from
   * its arrival) passes, so that its queued work is dropped.
   */
  signalFor(reply: FastifyReply): AbortSignal {
    const deadlineMs = this.#config.requestTimeoutMs;
    const controller = new AbortController();
    const deadline = setTimeout(
      () => controller.abort(new CutoutError('deadline_exceeded', `The request did not finish within ${deadlineMs} ms; the server is busy, retry later.`)),
      this.#deadlineOf(reply) - performance.now(),
    );
    reply.raw.once('close', () => {
      clearTimeout(deadline);
      if (!reply.raw.writableFinished) controller.abort(new CutoutError('invalid_request', 'The client closed the connection.'));
    });
    return controller.signal;
  }

  /**
   * What a removal answered by `reply` is held to: the request's deadline (the same as
   * `signalFor`'s), and its memory kept until the reply is over (sent, or its client gone).
   */
  replyTerms(reply: FastifyReply): Pick<RemovalRequest, 'deadline' | 'holdUntilSent'> {
    return {
      deadline: this.#deadlineOf(reply),
      holdUntilSent: (release) => {
        if (reply.raw.destroyed || reply.raw.writableFinished) release();
        else reply.raw.once('close', release);
      },
    };
  }

  /** A request's deadline as a `performance.now()` time: CUTOUT_REQUEST_TIMEOUT_MS after its arrival. */
  #deadlineOf(reply: FastifyReply): number {
    return performance.now() - reply.elapsedTime + this.#config.requestTimeoutMs;
  }

  /**
   * Refuses a URL the fetch would refuse without DNS or a connection (scheme, host lists, a
   * non-public IP address written as the host): for checking a background's URL before the
   * request waits for memory or the model. Throws `url_not_allowed` naming `field`.
   */
  checkUrl(url: string, field: string): void {
    const config = this.#config;
    checkUrlLiterally(url, { allowPrivate: config.urlAllowPrivate, allowHosts: config.urlAllowHosts, denyHosts: config.urlDenyHosts }, field);
  }

  /**
   * Fetches an image URL for a request, with the configured guards and limits, until the
   * signal aborts; `field` (`image_url`, `bg_image_url`) is what its errors name.
   */
  fetch(url: string, field: string, signal: AbortSignal): Promise<Uint8Array> {
    const config = this.#config;
    const fetching = fetchImage(url, {
      timeoutMs: config.urlTimeoutMs,
      maxBytes: config.maxImageBytes,
      maxRedirects: config.urlMaxRedirects,
      allowPrivate: config.urlAllowPrivate,
      allowHosts: config.urlAllowHosts,
      denyHosts: config.urlDenyHosts,
      signal,
      field,
    });
    return untilAborted(fetching, signal);
  }

  /**
   * One image through the pipeline, cut by the model the options name (the default when they
   * name none; `unknown_model` for one not loaded). First what needs no pixels: the model's
   * name, a background URL's literal checks, the photo's header (format, pixel limit). Then
   * the request reserves the memory its header and options need (`memory-estimate.ts`),
   * waiting while other removals hold the budget, and keeps it until its answer is sent
   * (`request.holdUntilSent`; else until this returns). A request with a `deadline` waits
   * only while it could still finish by it at the recent removals' pace (`work-times.ts`);
   * past that, 503 `queue_full` with Retry-After. The model
   * step waits in the inference queue, and the signal drops it from there. A background image
   * is fetched while the image waits and the model runs; if that fails, the removal stops at
   * once with its error. The model cannot be interrupted mid-run; once the signal has aborted,
   * the answer is the signal's reason and the result is dropped. An HEIC/HEIF photo is decoded
   * on the HEIC threads (`heic-thread.ts`) once its memory is reserved.
   */
  async remove(photo: Uint8Array, signal: AbortSignal, request: RemovalRequest = {}): Promise<RemovalResult> {
    const config = this.#config;
    const options = request.options ?? NO_OPTIONS;
    // Before the photo is read or the background fetched: an unknown model is told at once.
    const model = this.#model.segmenterFor(options.model);
    const bgImageUrl = request.backgroundImage ? undefined : options.bgImageUrl;
    if (bgImageUrl) this.checkUrl(bgImageUrl, 'bg_image_url');
    const answer: AnswerSpec = {
      ...options.answer,
      format: request.format ?? options.format ?? 'png',
      ...(request.backgroundImage && { background: { image: true } as const }),
    };
    const refine = options.refine ?? config.refine;
    const quality = options.quality ?? config.quality;
    const size = await untilAborted(headerSize(photo, config.maxPixels), signal);
    const side = this.#largestSide;
    const uploaded = request.backgroundImage instanceof Uint8Array ? request.backgroundImage : undefined;
    const uploadedSize = uploaded && (await untilAborted(this.#backgroundSize(uploaded, 'bg_image_file'), signal));
    const estimate = estimateRemovalBytes({
      width: size?.width ?? side,
      height: size?.height ?? side,
      heic: size?.heic ?? true,
      photoBytes: photo.byteLength,
      backgroundBytes: request.backgroundImage instanceof Uint8Array ? request.backgroundImage.byteLength : request.backgroundImage || bgImageUrl ? config.maxImageBytes : 0,
      answer,
      base64Answer: request.base64Answer ?? false,
      refine,
      looks: quality === 'fast' ? 1 : 2,
      modelSize: model.segmenter.size,
    });
    const pixels = size && size.width * size.height;
    const patience = request.deadline === undefined ? undefined : this.#workTimes.patience(pixels, request.deadline);
    const holds = new Reservations();
    const waited = performance.now();
    holds.add(await this.#budget.reserve(estimate + (uploadedSize ? backgroundDecodeBytes(uploadedSize) : 0), signal, patience));
    const admitted = performance.now();
    const release = () => holds.release();
    try {
      const result = await this.#removeWithin(photo, signal, { request, answer, bgImageUrl, refine, quality, model, pixels, holds, backgroundKnown: uploaded !== undefined, memory: admitted - waited });
      this.#workTimes.record(pixels, performance.now() - admitted);
      if (request.holdUntilSent) request.holdUntilSent(release);
      else release();
      return result;
    } catch (error) {
      // Work cut by the deadline took at least this long.
      if (error instanceof CutoutError && error.code === 'deadline_exceeded') this.#workTimes.record(pixels, performance.now() - admitted);
      release();
      throw error;
    }
  }

  /**
   * A background's size from its header, refused as the photo's would be but naming `field`;
   * an HEIC whose header sharp cannot read counts as the largest one allowed.
   */
  async #backgroundSize(image: Uint8Array, field: string): Promise<{ width: number; height: number; heic: boolean }> {
    const size = await headerSize(image, this.#config.maxPixels).catch((error: unknown) => Promise.reject(namedFor(field, error)));
    return size ?? { width: this.#largestSide, height: this.#largestSide, heic: true };
  }

  /** The side of the largest square photo the pixel limit allows: the size of a photo whose header says none. */
  get #largestSide(): number {
    return Math.ceil(Math.sqrt(this.#config.maxPixels));
  }

  async #removeWithin(
    photo: Uint8Array,
    requestSignal: AbortSignal,
    parts: RunParts,
  ): Promise<RemovalResult> {
    // The request's signal, and a failed background: either stops the removal where it is.
    // Not AbortSignal.any: Node keeps a composed signal that has listeners alive until it
    // aborts, and with it whatever they hold (an HEIC's pixels, through the HEIC thread's).
    const stop = new AbortController();
    const signal = stop.signal;
    const forward = () => stop.abort(requestSignal.reason);
    if (requestSignal.aborted) forward();
    else requestSignal.addEventListener('abort', forward, { once: true });
    try {
      return await this.#run(photo, requestSignal, stop, parts);
    } finally {
      requestSignal.removeEventListener('abort', forward);
    }
  }

  async #run(
    photo: Uint8Array,
    requestSignal: AbortSignal,
    stop: AbortController,
    parts: RunParts,
  ): Promise<RemovalResult> {
    const config = this.#config;
    const { request, answer, bgImageUrl, model } = parts;
    const options = request.options ?? NO_OPTIONS;
    const signal = stop.signal;
    const readStart = performance.now();
    const bytes = await untilAborted(this.#heic.readable(photo, config.maxPixels, signal), signal);
    const heic = performance.now() - readStart;
    const backgroundBytes = request.backgroundImage ? Promise.resolve(request.backgroundImage) : bgImageUrl ? this.fetch(bgImageUrl, 'bg_image_url', requestSignal) : undefined;
    const backgroundField = request.backgroundImage instanceof Uint8Array ? 'bg_image_file' : 'bg_image_url';
    const backgroundImage = backgroundBytes?.then(async (image) => {
      // A background known only now (a URL's) reserves what its decode holds before it decodes.
      if (!parts.backgroundKnown) parts.holds.add(await this.#budget.reserve(backgroundDecodeBytes(await this.#backgroundSize(image, backgroundField)), signal));
      return this.#heic.readable(image, config.maxPixels, signal).catch((error: unknown) => Promise.reject(namedFor(backgroundField, error)));
    });
    backgroundImage?.catch((error: unknown) => stop.abort(error));
    const work = removeBackground(bytes, {
      segmenter: model.segmenter,
      finisher: this.#finisher,
      slot: request.forJob ? this.#queue.jobSlot : this.#queue,
      signal,
      maxPixels: config.maxPixels,
      pixels: parts.pixels,
      refine: parts.refine,
      quality: parts.quality,
      pngCompression: config.pngCompression,
      answer,
      roi: options.roi,
      backgroundImage,
      backgroundField,
    });
    work.catch(() => {});
    return untilAborted(
      work.then((removed) => ({ ...removed, model: model.name, timings: { memory: parts.memory, heic, ...removed.timings } })),
      signal,
    );
  }
}

/** A background's own decode error, its detail naming the field the background came from. */
function namedFor(field: string, error: unknown): unknown {
  return error instanceof CutoutError && error.code !== 'deadline_exceeded' && error.code !== 'invalid_request' ? new CutoutError(error.code, `${field}: ${error.message}`, { cause: error.cause }) : error;
}

type RemovalQuality = NonNullable<OutputOptions['quality']>;

/** What `remove` settled before the removal runs. */
interface RunParts {
  request: RemovalRequest;
  answer: AnswerSpec;
  bgImageUrl: string | undefined;
  refine: boolean;
  quality: RemovalQuality;
  model: ReturnType<ModelService['segmenterFor']>;
  /** The photo's pixels from its header; undefined when sharp could not read it (an HEIC's come from its decode). */
  pixels: number | undefined;
  /** The request's reservations of the memory budget, released together once its reply is over. */
  holds: Reservations;
  /** The background's decode is in the first reservation already (an uploaded one's header was read). */
  backgroundKnown: boolean;
  /** Milliseconds the request waited for its memory. */
  memory: number;
}
