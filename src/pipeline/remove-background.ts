import type { Segmenter } from '../model/onnx-segmenter.js';
import { composeCutout } from './compose.js';
import { decodeForModel, decodeImage } from './decode.js';
import { encodePng, type PngCompression } from './encode.js';
import { DEFAULT_REFINE_SETTINGS, type Refiner, type RefineSettings } from './refine.js';
import { segment } from './segment.js';

/** Milliseconds spent in each stage of one image, as `Server-Timing` reports them. */
export interface StageTimings {
  /**
   * Full-size decode; runs beside the model-sized decode when the model is free, beside the
   * model otherwise, so it mostly hides behind one of them.
   */
  decode: number;
  /** Decode straight to the model's size. */
  preprocess: number;
  /**
   * The model step without its time in the queue: the picture to the model's thread, the
   * tensor filled there, the run, and the 8-bit mask back.
   */
  inference: number;
  /**
   * Mask to full size (bilinear) and joined to the photo as RGBA; 0 when the refine stage
   * ran, which writes the full-size alpha into the photo itself.
   */
  postprocess: number;
  /**
   * Edge refinement and foreground colours (docs/quality.md) once the mask is there; the
   * part that needs only the photo runs beside inference, like decode. 0 when switched off.
   */
  refine: number;
  /** The PNG encode of the RGBA cut-out. */
  encode: number;
  /** Waiting for a free model slot. */
  queue: number;
}

export interface RemovedBackground {
  png: Buffer;
  width: number;
  height: number;
  timings: StageTimings;
}

export interface RemoveBackgroundOptions {
  segmenter: Segmenter;
  maxPixels: number;
  /** Runs the model step; the inference queue passes its own scheduler here. */
  schedule?: <T>(work: () => Promise<T>) => Promise<T>;
  /**
   * Claims the model for this image if `schedule` would run it at once, returning the
   * release, called once the image is scheduled (default: the model is always free). Then the
   * full-size decode starts beside the model-sized one, on the other core, instead of beside
   * the model, whose two threads it would slow; otherwise it waits for the image's turn. The
   * claim keeps the images of a burst from all starting their full-size decodes at once.
   */
  claimModel?: () => (() => void) | undefined;
  /**
   * Refine the edges and the colours along them (default true, with the measured settings);
   * false gives the model's mask stretched as it is. Settings of its own are for experiments
   * (`npm run eval`).
   */
  refine?: boolean | RefineSettings;
  /** The process's refine thread; needed unless `refine` is false. */
  refiner?: Refiner;
  /** How hard the PNG is compressed (CUTOUT_PNG_COMPRESSION; default `fast`). */
  pngCompression?: PngCompression;
}

const since = (start: number) => performance.now() - start;

/**
 * One image through the whole pipeline: decode → segment → refine (or the plain stretch of
 * compose) → encode. Returns the PNG of the picture with its background transparent, at the
 * input's (oriented) size.
 *
 * The model-sized decode comes first and is all that waits in the queue: the full-size
 * decode starts when the image's turn at the model comes, and runs beside it, so a long queue
 * holds small pictures, not full-size ones; but when the model is free it starts at once,
 * beside the model-sized decode. With refinement (the default) the full-size decode, the
 * refinement and the encode all run on the refine thread (`refine.ts`).
 *
 * @example const { png } = await removeBackground(jpegBytes, { segmenter, refiner, maxPixels: 50e6 })
 */
export async function removeBackground(bytes: Uint8Array, options: RemoveBackgroundOptions): Promise<RemovedBackground> {
  const { segmenter, maxPixels, refiner } = options;
  const schedule = options.schedule ?? ((work) => work());
  const refine = options.refine === false ? undefined : options.refine === true || options.refine === undefined ? DEFAULT_REFINE_SETTINGS : options.refine;
  if (refine && !refiner) throw new Error('removeBackground: refine needs a refiner (or refine: false)');
  const timings: StageTimings = { decode: 0, preprocess: 0, inference: 0, postprocess: 0, encode: 0, queue: 0, refine: 0 };

  const photo = { photo: bytes, maxPixels, pngCompression: options.pngCompression };
  const claimModel = options.claimModel ?? (() => () => {});
  const releaseModel = refine && refiner ? claimModel() : undefined;
  let refinement = releaseModel && refiner ? refiner.begin(photo) : undefined;
  let start = performance.now();
  const modelInput = await decodeForModel(bytes, { maxPixels, size: segmenter.size }).catch((error: unknown) => {
    releaseModel?.();
    refinement?.cancel();
    throw error;
  });
  timings.preprocess = since(start);
  releaseModel?.();

  const queued = performance.now();
  const runModel = async () => {
    const inferenceStart = performance.now();
    const mask = await segment(modelInput, segmenter);
    timings.inference = since(inferenceStart);
    return mask;
  };

  if (refine && refiner) {
    const scheduled = schedule(async () => {
      timings.queue = since(queued);
      const begun = (refinement ??= refiner.begin(photo));
      begun.prepare(modelInput, refine);
      return { mask: await runModel(), begun };
    });
    // Whatever failed, the refine thread must not keep this image.
    scheduled.catch(() => refinement?.cancel());
    const { mask, begun } = await scheduled;
    start = performance.now();
    const refined = await begun.finish(mask);
    timings.decode = refined.timings.decode;
    timings.encode = refined.timings.encode;
    // The refinement with its hand-offs to the thread and back: all but the encode.
    timings.refine = since(start) - refined.timings.encode;
    return { png: refined.png, width: refined.width, height: refined.height, timings };
  }

  const { mask, image } = await schedule(async () => {
    timings.queue = since(queued);
    const decodeStart = performance.now();
    const fullSize = decodeImage(bytes, { maxPixels }).finally(() => (timings.decode = since(decodeStart)));
    // A failed decode must not leave an unhandled rejection while the model runs.
    fullSize.catch(() => {});
    const mask = await runModel();
    return { mask, image: await fullSize };
  });
  start = performance.now();
  const cutout = await composeCutout(image, mask);
  timings.postprocess = since(start);
  start = performance.now();
  const png = await encodePng(cutout, options.pngCompression);
  timings.encode = since(start);
  return { png, width: image.width, height: image.height, timings };
}
