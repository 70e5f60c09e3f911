import type { RawImage } from '../image/raw-image.js';
import { encodePng } from './encode.js';
import type { FinishSpec, FinishTimings } from './finish-protocol.js';
import { finishRefinement, type PreparedRefinement } from './refine/refine-cutout.js';
import { stretchAlpha } from './stretch-alpha.js';

/** One image on the finish thread, between its `begin` and its `finish`. */
export interface FinishJob {
  spec: FinishSpec;
  /** The photo at full size, RGBA with an opaque alpha for the steps to write. */
  photo: Promise<RawImage>;
  /** The refinement's grid work, once `prepare` has brought the model's input. */
  prepared?: PreparedRefinement;
  decodeMs: number;
}

/** What the finishing answers: the encoded image and the size of what it shows. */
export interface FinishedImage {
  bytes: Uint8Array;
  width: number;
  height: number;
  timings: FinishTimings;
}

/**
 * The finishing stage: turns the model's mask into the answer's bytes, over the full-size
 * pixels once, as a short sequence of steps on the finish thread:
 * 1. alpha: the mask at full size, refined along the photo's own edges (with the foreground
 *    colours of semi-transparent pixels cleaned of the old background, `refine/`) or
 *    stretched as it is (`stretch-alpha.ts`);
 * 2. encode: the RGBA cut-out as PNG (`encode.ts`).
 * Every step takes the RGBA cut-out the step before left and may rewrite it in place.
 *
 * @example const { bytes } = await finishImage(job, mask)
 */
export async function finishImage(job: FinishJob, mask: RawImage): Promise<FinishedImage> {
  const { spec } = job;
  if (spec.refine && !job.prepared) throw new Error('a refined image was finished before it was prepared');
  const photo = await job.photo;

  let start = performance.now();
  const cutout = job.prepared ? finishRefinement(job.prepared, photo, mask) : await stretchAlpha(photo, mask);
  const alpha = performance.now() - start;

  start = performance.now();
  const bytes = await encodePng(cutout, spec.pngCompression);
  const encode = performance.now() - start;
  return { bytes, width: cutout.width, height: cutout.height, timings: { decode: job.decodeMs, alpha, encode } };
}
