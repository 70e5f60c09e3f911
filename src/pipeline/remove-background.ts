import { alwaysFree, type ModelSlot } from '../inference/model-slot.js';
import type { Box } from '../image/box.js';
import type { Segmenter } from '../model/segmenter.js';
import { DEFAULT_ANSWER, type AnswerSpec, type EncodedFormat, type RegionOfInterest } from './answer-spec.js';
import { decodeForModel, orientedSize, resolveRegion, type ResolvedRegion } from './decode.js';
import type { PngCompression } from './encode.js';
import type { FinishSpec } from './finish-protocol.js';
import type { Finisher } from './finish-thread.js';
import { isDecodedPixels, LARGE_PHOTO_PIXELS, type PhotoInput } from './photo-input.js';
import { DEFAULT_REFINE_SETTINGS, type RefineSettings } from './refine/refine-cutout.js';
import { lookAtPhoto } from './look-at-photo.js';
import type { Quality } from './views.js';

/** Milliseconds spent in each stage of one image, as `Server-Timing` reports them. */
export interface StageTimings {
  /**
   * Full-size decode on the finish thread; runs beside the model-sized decode when the model
   * is free, beside the model otherwise, so it mostly hides behind one of them.
   */
  decode: number;
  /** Decode straight to the model's size. */
  preprocess: number;
  /** Waiting for the model's turn. */
  queue: number;
  /**
   * The model step without its time in the queue: the views of the picture to the model's
   * thread, a tensor filled there and a run for each, their 8-bit masks back, and the fusion.
   */
  inference: number;
  /**
   * The finishing's alpha step when refined (edges and foreground colours, docs/quality.md),
   * with its hand-offs to the finish thread and back; the part that needs only the photo
   * runs beside inference, like decode. 0 when the mask is only stretched.
   */
  refine: number;
  /** The same when the mask is only stretched (`refine: false`); 0 when refined. */
  postprocess: number;
  /** Crop, resize, background and the mask alone, when asked for; 0 for the default answer. */
  compose: number;
  /** The encode of the answer. */
  encode: number;
}

export interface RemovedBackground {
  /** The answer's encoded image, in the format its {@link AnswerSpec} asked for. */
  bytes: Buffer;
  /** What `bytes` are (the format `auto` chose, for one). */
  format: EncodedFormat;
  /** The answer's own size. */
  width: number;
  height: number;
  /** The input photo's (oriented) size. */
  input: { width: number; height: number };
  /** The subject's box in the input's (oriented) pixels; absent when the model found none. */
  foreground?: Box;
  /** How doubtful the cut is, 0 to 1 (`views.ts`, uncertaintyOf), of the looks that answered. */
  uncertainty: number;
  /**
   * The model's looks at the photo: 1 with `fast` and with an `auto` sure of its first look,
   * 2 with `best` and with an `auto` that took the second (`look-at-photo.ts`).
   */
  looks: 1 | 2;
  timings: StageTimings;
}

export interface RemoveBackgroundOptions {
  segmenter: Segmenter;
  finisher: Finisher;
  /** The photo's pixels, when the caller knows them from its header: a large photo may be overtaken in the model's queue. */
  pixels?: number;
  maxPixels: number;
  /**
   * `fast`: the model's one view of the photo; `best`: the photo and its mirror, fused
   * (`views.ts`); `auto`: the mirror too only when the first look is doubtful
   * (`look-at-photo.ts`). Default `fast`; the server passes CUTOUT_QUALITY or the request's own.
   */
  quality?: Quality;
  /** The model's turn: the server's inference queue; default a slot that is always free. */
  slot?: ModelSlot;
  /** Drops the image from the queue when it aborts (client gone, deadline). */
  signal?: AbortSignal;
  /**
   * Refine the edges and the colours along them (default true, with the measured settings);
   * false gives the model's mask stretched as it is. Settings of its own are for experiments
   * (`npm run eval`).
   */
  refine?: boolean | RefineSettings;
  pngCompression?: PngCompression;
  /** What the answer should be (format, crop, background, …); default a full-size transparent PNG. */
  answer?: AnswerSpec;
  /** Only this region of the photo may be foreground; the model sees it, widened towards a square (`resolveRegion`). */
  roi?: RegionOfInterest;
  /** The background image (its bytes, or an HEIC's pixels), when `answer` asks for one; awaited once the mask is there. */
  backgroundImage?: Promise<PhotoInput>;
  /** The request field the background image came from, as its errors name it; default `bg_image_url`. */
  backgroundField?: string;
}

/**
 * One image from its encoded bytes (or an HEIC's pixels, `heic-thread.ts`) to the answer's PNG, with its background transparent, at
 * the input's (oriented) size. Two sides meet at the model's mask:
 * - on the main thread, the picture decoded straight to the model's size (`decode.ts`), then
 *   the model step (`Segmenter.segment`, on the model's own thread) when the slot gives the
 *   image its turn;
 * - on the finish thread (`finish-thread.ts`), the photo at full size, then the finishing
 *   steps that turn the mask into the answer's bytes (`finish-steps.ts`).
 * Only the model-sized picture waits in the queue: the full-size decode starts when the
 * image's turn comes, or at once if the image could claim a free model, beside the
 * model-sized decode; a burst at an idle model therefore starts one full-size decode, not one
 * per image.
 *
 * @example const { bytes } = await removeBackground(jpegBytes, { segmenter, finisher, maxPixels: 50e6 })
 */
export async function removeBackground(bytes: PhotoInput, options: RemoveBackgroundOptions): Promise<RemovedBackground> {
  const { segmenter, finisher, maxPixels } = options;
  const slot = options.slot ?? alwaysFree;
  const quality = options.quality ?? 'fast';
  const spec: FinishSpec = { refine: refineSettings(options.refine), pngCompression: options.pngCompression, answer: options.answer ?? DEFAULT_ANSWER };
  const timings: StageTimings = { decode: 0, preprocess: 0, queue: 0, inference: 0, refine: 0, postprocess: 0, compose: 0, encode: 0 };
  const pixels = options.pixels ?? (isDecodedPixels(bytes) ? bytes.image.width * bytes.image.height : undefined);
  const begin = () => finisher.begin(bytes, { maxPixels, spec });

  const release = slot.claim();
  let finishing = release ? begin() : undefined;
  let start = performance.now();
  let resolved: ResolvedRegion | undefined;
  // Only a model that letterboxes needs the shape of what it sees (Segmenter.segment).
  let aspect: number | undefined;
  const modelInput = await (async () => {
    resolved = options.roi && (await resolveRegion(bytes, options.roi, maxPixels));
    if (segmenter.fit === 'letterbox') {
      const seen = resolved?.view ?? (await orientedSize(bytes, maxPixels));
      aspect = seen.width / seen.height;
    }
    return decodeForModel(bytes, { maxPixels, size: segmenter.size, region: resolved?.view });
  })().catch((error: unknown) => {
    release?.();
    finishing?.cancel();
    throw error;
  });
  timings.preprocess = since(start);
  release?.();

  const queued = performance.now();
  const modelStep = slot.run(async () => {
    timings.queue = since(queued);
    const begun = (finishing ??= begin());
    // Copied to the finish thread before the model's step moves the pixels away.
    begun.prepare(modelInput);
    start = performance.now();
    const segmentation = await lookAtPhoto(segmenter, modelInput, quality, aspect);
    timings.inference = since(start);
    return { segmentation, begun };
  }, options.signal, { large: (pixels ?? 0) > LARGE_PHOTO_PIXELS });
  // Whatever failed, the finish thread must not keep this image.
  modelStep.catch(() => finishing?.cancel());
  const { segmentation, begun } = await modelStep;
  const { mask, uncertainty, looks } = segmentation;

  const backgroundImage = await options.backgroundImage?.catch((error: unknown) => {
    begun.cancel();
    throw error;
  });
  start = performance.now();
  const answer = await begun.finish(mask, { ...resolved, backgroundImage, backgroundField: options.backgroundField });
  timings.decode = answer.timings.decode;
  timings.compose = answer.timings.compose;
  timings.encode = answer.timings.encode;
  timings[spec.refine ? 'refine' : 'postprocess'] = since(start) - answer.timings.encode - answer.timings.compose;
  const { bytes: answerBytes, format, width, height, input, foreground } = answer;
  return { bytes: answerBytes, format, width, height, input, foreground, uncertainty, looks, timings };
}

function refineSettings(refine: boolean | RefineSettings | undefined): RefineSettings | undefined {
  if (refine === false) return undefined;
  return refine === true || refine === undefined ? DEFAULT_REFINE_SETTINGS : refine;
}

function since(start: number): number {
  return performance.now() - start;
}
