import type { FastifyReply } from 'fastify';
import type { Config } from '../config.js';
import { CutoutError } from '../errors.js';
import type { InferenceQueue } from '../inference/inference-queue.js';
import type { ModelService } from '../model/model-service.js';
import { fetchImage } from '../fetch/fetch-image.js';
import { untilAborted } from '../until-aborted.js';
import type { RequestedFormat } from '../pipeline/answer-spec.js';
import type { FinishThread } from '../pipeline/finish-thread.js';
import { HeicThread } from '../pipeline/heic-thread.js';
import { removeBackground, type RemovedBackground } from '../pipeline/remove-background.js';
import { NO_OPTIONS, type OutputOptions } from '../options/output-options.js';
import { answerSpec } from '../options/read-options.js';

/** What a request chose about its removal; the server's configuration decides the rest. */
export interface RemovalRequest {
  /** The request's output options (`src/options/`); default none. */
  options?: OutputOptions;
  /** The answer's format: the options' own, or the one the Accept header chose; default PNG. */
  format?: RequestedFormat;
  /** A background image got by the route itself (remove.bg's `bg_image_file`, or a URL it fetches), instead of `bgImageUrl`. */
  backgroundImage?: Uint8Array | Promise<Uint8Array>;
}

/** A removal's result: the pipeline's answer and the model that cut. */
export type RemovalResult = RemovedBackground & { model: string };

/**
 * Runs a removal for an HTTP request, for every route that offers one (the API's three
 * endpoints and the dashboard's try-it): the capacity check before the body is read, the
 * request's deadline and disconnection, and the pipeline through the process's one inference
 * queue and finish thread. Decorated once on the app as `app.removals`.
 *
 * @example
 * app.addHook('onRequest', async () => app.removals.assertCapacity())
 * const { bytes } = await app.removals.remove(image, app.removals.signalFor(reply), { refine: true })
 */
export class RemovalService {
  readonly #config: Config;
  readonly #model: ModelService;
  readonly #queue: InferenceQueue;
  readonly #finisher: FinishThread;
  readonly #heic: HeicThread;

  /** `heic`: the thread that reads HEIC/HEIF photos; default one of the service's own. */
  constructor(parts: { config: Config; model: ModelService; queue: InferenceQueue; finisher: FinishThread; heic?: HeicThread }) {
    this.#config = parts.config;
    this.#model = parts.model;
    this.#queue = parts.queue;
    this.#finisher = parts.finisher;
    this.#heic = parts.heic ?? new HeicThread();
  }

  /** Refuses at once, before the body is read, when the model is not loaded or its queue is full. */
  assertCapacity(): void {
    void this.#model.segmenter; // throws not_ready while the model loads
    if (this.#queue.full) throw this.#queue.fullError();
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
      deadlineMs - reply.elapsedTime,
    );
    reply.raw.once('close', () => {
      clearTimeout(deadline);
      if (!reply.raw.writableFinished) controller.abort(new CutoutError('invalid_request', 'The client closed the connection.'));
    });
    return controller.signal;
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
   * name none; `unknown_model` for one not loaded): the model step waits in the inference queue, and the
   * signal drops it from there. A background image is fetched while the image waits and the
   * model runs. The model cannot be interrupted mid-run; once the signal has aborted, the
   * answer is the signal's reason and the result is dropped. An HEIC/HEIF photo is first
   * decoded on the HEIC thread (`heic-thread.ts`).
   */
  async remove(photo: Uint8Array, signal: AbortSignal, request: RemovalRequest = {}): Promise<RemovalResult> {
    const config = this.#config;
    const options = request.options ?? NO_OPTIONS;
    // Before the photo is read or the background fetched: an unknown model is told at once.
    const model = this.#model.segmenterFor(options.model);
    const bytes = await untilAborted(this.#heic.readable(photo, config.maxPixels, signal), signal);
    const backgroundBytes = request.backgroundImage ? Promise.resolve(request.backgroundImage) : options.bgImageUrl ? this.fetch(options.bgImageUrl, 'bg_image_url', signal) : undefined;
    const backgroundImage = backgroundBytes?.then((image) => this.#heic.readable(image, config.maxPixels, signal));
    backgroundImage?.catch(() => {}); // awaited by the pipeline once the mask is there
    const work = removeBackground(bytes, {
      segmenter: model.segmenter,
      finisher: this.#finisher,
      slot: this.#queue,
      signal,
      maxPixels: config.maxPixels,
      refine: options.refine ?? config.refine,
      quality: options.quality ?? config.quality,
      pngCompression: config.pngCompression,
      answer: {
        ...answerSpec(options, options.format ?? 'png'),
        ...(request.format && { format: request.format }),
        ...(request.backgroundImage && { background: { image: true } as const }),
      },
      roi: options.roi,
      backgroundImage,
    });
    work.catch(() => {});
    return untilAborted(
      work.then((removed) => ({ ...removed, model: model.name })),
      signal,
    );
  }
}
