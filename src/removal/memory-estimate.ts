import { OPTIONS, type OptionCost, type OptionMemory } from '../options/option-table.js';
import type { AnswerSpec } from '../pipeline/answer-spec.js';
import { BYTES_PER_PIXEL, ENCODED_BYTES_PER_PIXEL, MODEL_BYTES_PER_PIXEL } from '../pipeline/pixel-bytes.js';

/** What is known of one removal before any pixel is decoded: its header's size, its bytes and its options. */
export interface RemovalFootprint {
  /** The photo's size from its header (oriented or not: only the product counts). */
  width: number;
  height: number;
  /** An HEIC/HEIF, decoded whole to shared RGBA by libheif before the pipeline's decode. */
  heic: boolean;
  /** The photo's encoded bytes, held until the answer is sent. */
  photoBytes: number;
  /** A background image's encoded bytes (its upload's length, or the byte limit for a URL not fetched yet); 0 without one. */
  backgroundBytes: number;
  /** What the answer should be. */
  answer: AnswerSpec;
  /** The answer goes out as Base64 inside JSON: a second copy of its bytes, 4/3 as large. */
  base64Answer: boolean;
  /** Refined edges (a few planes at full size) or the mask only stretched. */
  refine: boolean;
  /** The model's looks: 2 for `best` and for `auto`, which may take a second. */
  looks: 1 | 2;
  /** The model's input side (1024 for the bundled model). */
  modelSize: number;
}

/** Each distinct cost of the options (`option-table.ts`): options that make one effect together share one, counted once. */
const OPTION_COSTS: readonly OptionCost[] = [...new Set(Object.values(OPTIONS).flatMap(({ memory }: { memory: OptionMemory }) => (typeof memory === 'object' ? [memory] : [])))];

/**
 * What an HEIC/HEIF background of `pixels` holds beyond its removal's estimate: libheif
 * decodes it whole (its RGBA and the decoder's heap), where sharp streams any other
 * background down to the answer's size. 0 for a background that is not HEIC.
 *
 * @example backgroundDecodeBytes({ width: 4000, height: 3000, heic: true }) // 144 MB
 */
export function backgroundDecodeBytes(size: { width: number; height: number; heic: boolean }): number {
  return size.heic ? (BYTES_PER_PIXEL.photo + BYTES_PER_PIXEL.heicDecoder) * size.width * size.height : 0;
}

/**
 * An upper bound of the bytes one removal holds at its peak, from what is known before any
 * pixel is decoded (the header's size, the bytes, the options): what the memory budget
 * (`memory-budget.ts`) reserves for it while it waits for the model and until its answer is sent.
 *
 * The arithmetic, with P the photo's pixels and A the answer's:
 * - held throughout: the photo's and the background's encoded bytes, and the model's
 *   pictures and masks (`looks × 5 × modelSize²`);
 * - then the larger of two phases, which do not overlap in time:
 *   - decode: an HEIC's RGBA (4 P) and libheif's heap beside it (8 P); a photo sharp decodes
 *     streams it, so only its full-size RGBA (4 P) counts;
 *   - finish: the full-size RGBA (4 P, or 4 A when the answer is scaled before the decode),
 *     the alpha step (refined 3, stretched 1 per pixel), the cost the option table gives each
 *     effect the answer has (a crop's frame 4 A, a shadow 10 A, …), the encoder (1 A), and the
 *     encoded answer (its bytes per pixel × A), 7/3 of that with its Base64 copy.
 *
 * @example estimateRemovalBytes({ width: 7000, height: 7000, heic: true, photoBytes: 1 << 20, backgroundBytes: 0, answer: DEFAULT_ANSWER, base64Answer: false, refine: true, looks: 2, modelSize: 1024 }) // ≈ 550 MB
 */
export function estimateRemovalBytes(footprint: RemovalFootprint): number {
  const { width, height, heic, answer, refine, looks, modelSize } = footprint;
  const b = BYTES_PER_PIXEL;
  const photoPixels = width * height;
  const answerPixels = answerPixelsOf(width, height, answer);
  // beginPhoto decodes straight to the answer's size when the answer is scaled and not cropped.
  const decodedPixels = heic || answer.crop ? photoPixels : Math.min(photoPixels, answerPixels);

  const held = footprint.photoBytes + footprint.backgroundBytes + looks * MODEL_BYTES_PER_PIXEL * modelSize * modelSize;
  const decode = heic ? (b.photo + b.heicDecoder) * photoPixels : b.photo * decodedPixels;

  let finish = b.photo * decodedPixels + (refine ? b.refine : b.stretch) * decodedPixels;
  for (const cost of OPTION_COSTS) if (cost.when(answer)) finish += cost.answer * answerPixels + (cost.photo ?? 0) * decodedPixels;
  const copies = footprint.base64Answer ? 1 + 4 / 3 : 1;
  finish += b.encoder * answerPixels + copies * ENCODED_BYTES_PER_PIXEL[answer.format] * answerPixels;

  return Math.ceil(held + Math.max(decode, finish));
}

/**
 * The answer's pixels at most: the photo's, scaled down (never up) to fit `maxWidth`,
 * `maxHeight` and `maxPixels`. A crop's box is the model's to find, and the sides' caps apply
 * to it, so a cropped answer is bounded only by the photo, `maxPixels` and the two sides together.
 */
function answerPixelsOf(width: number, height: number, answer: AnswerSpec): number {
  let pixels = width * height;
  if (answer.crop) {
    if (answer.maxWidth !== undefined && answer.maxHeight !== undefined) pixels = Math.min(pixels, answer.maxWidth * answer.maxHeight);
  } else {
    const scale = Math.min(1, (answer.maxWidth ?? width) / width, (answer.maxHeight ?? height) / height);
    pixels *= scale * scale;
  }
  return Math.max(1, answer.maxPixels === undefined ? pixels : Math.min(pixels, answer.maxPixels));
}
