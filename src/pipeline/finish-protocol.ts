/**
 * What the main thread (`finish-thread.ts`) and the finish thread (`finish-worker.ts`) say
 * to each other; both sides import these types. One image's finishing is four messages at
 * most, all with its `id`:
 * - `begin`: the photo's own bytes and the {@link FinishSpec}; the thread starts decoding the
 *   photo at full size at once;
 * - `prepare` (refined answers only, sent while the model runs): the model's input, for the
 *   refinement's grid work that needs nothing else;
 * - `finish`: the model's mask (moved, not copied), answered with a {@link FinishResult};
 * - `drop`: forget an image that will not be finished.
 */
import type { RawImage } from '../image/raw-image.js';
import type { ThreadError } from '../threads/thread-error.js';
import type { PngCompression } from './encode.js';
import type { RefineSettings } from './refine/refine-cutout.js';

/** How an image's answer is made from its mask: the steps of `finish-steps.ts` read it. */
export interface FinishSpec {
  /** Refine the alpha along the photo's own edges with these settings; absent: the model's mask stretched as it is. */
  refine?: RefineSettings;
  /** How hard the PNG is compressed (CUTOUT_PNG_COMPRESSION); encode.ts has the default. */
  pngCompression?: PngCompression;
}

export type FinishRequest =
  | { type: 'begin'; id: number; photo: Uint8Array; maxPixels: number; spec: FinishSpec }
  | { type: 'prepare'; id: number; modelInput: RawImage }
  | { type: 'finish'; id: number; mask: RawImage }
  | { type: 'drop'; id: number };

/** Milliseconds of the steps on the finish thread. */
export interface FinishTimings {
  /** The full-size decode, which runs before or beside the model. */
  decode: number;
  /** The mask made into the full-size alpha (refined or stretched). */
  alpha: number;
  encode: number;
}

/** The answer to `finish`: the encoded image and its size, or the error that stopped it. */
export type FinishResult =
  | { id: number; bytes: Uint8Array; width: number; height: number; timings: FinishTimings; error?: undefined }
  | { id: number; error: ThreadError; bytes?: undefined };
