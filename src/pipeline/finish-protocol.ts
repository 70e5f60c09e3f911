/**
 * What the main thread (`finish-thread.ts`) and the finish thread (`finish-worker.ts`) say
 * to each other; both sides import these types. One image's finishing is four messages at
 * most, all with its `id`:
 * - `begin`: the photo's own bytes (or an HEIC's pixels, shared, not copied) and the {@link FinishSpec}; the thread starts decoding the
 *   photo at full size at once;
 * - `prepare` (refined answers only, sent while the model runs): the model's input, for the
 *   refinement's grid work that needs nothing else;
 * - `finish`: the model's mask (moved, not copied), the part of the photo it covers and the
 *   region of interest, and the background image, if the answer has them; answered with a
 *   {@link FinishResult};
 * - `drop`: forget an image that will not be finished.
 */
import type { Box } from '../image/box.js';
import type { RawImage } from '../image/raw-image.js';
import type { ThreadError } from '../threads/thread-error.js';
import type { AnswerSpec, EncodedFormat } from './answer-spec.js';
import type { PngCompression } from './encode.js';
import type { PhotoInput } from './photo-input.js';
import type { RefineSettings } from './refine/refine-cutout.js';

/** How an image's answer is made from its mask: the steps of `finish-steps.ts` read it. */
export interface FinishSpec {
  /** Refine the alpha along the photo's own edges with these settings; absent: the model's mask stretched as it is. */
  refine?: RefineSettings;
  /** How hard the PNG is compressed (CUTOUT_PNG_COMPRESSION); encode.ts has the default. */
  pngCompression?: PngCompression;
  /** What the answer should be; default {@link DEFAULT_ANSWER}, a full-size transparent PNG. */
  answer?: AnswerSpec;
}

export type FinishRequest =
  | { type: 'begin'; id: number; photo: PhotoInput; maxPixels: number; spec: FinishSpec }
  | { type: 'prepare'; id: number; modelInput: RawImage }
  | { type: 'finish'; id: number; mask: RawImage; region?: Box; view?: Box; backgroundImage?: PhotoInput; backgroundField?: string }
  | { type: 'drop'; id: number };

/** Milliseconds of the steps on the finish thread. */
export interface FinishTimings {
  /** The full-size decode, which runs before or beside the model. */
  decode: number;
  /** The mask made into the full-size alpha (refined or stretched). */
  alpha: number;
  /** Crop, resize, background and the mask alone: 0 for the default answer. */
  compose: number;
  encode: number;
}

/** An image's answer, as the finish thread makes it. */
export interface FinishedImage {
  bytes: Uint8Array;
  /** What `bytes` are: the format asked for, or the one `auto` chose, or the zip archive. */
  format: EncodedFormat;
  /** The answer's own size. */
  width: number;
  height: number;
  /** The input photo's (oriented) size. */
  input: { width: number; height: number };
  /** The subject's box in the input's (oriented) pixels; absent when nothing is visible. */
  foreground?: Box;
  timings: FinishTimings;
}

/** The answer to `finish`: the finished image, or the error that stopped it. */
export type FinishResult = ({ id: number; error?: undefined } & FinishedImage) | { id: number; error: ThreadError; bytes?: undefined };
