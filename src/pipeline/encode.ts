import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { CompressionType, FilterType, Transformer } from '@napi-rs/image';
import sharp from 'sharp';
import type { RawImage } from '../image/raw-image.js';
import type { AnswerFormat } from './answer-spec.js';

/**
 * How hard the answers' PNGs are compressed (CUTOUT_PNG_COMPRESSION): `fast` (fdeflate, the
 * default) or `small` (zlib's default level: smaller files for several times the time;
 * docs/benchmarks.md has the figures).
 */
export type PngCompression = 'fast' | 'small';
export const DEFAULT_PNG_COMPRESSION: PngCompression = 'fast';

/**
 * Last stage: the PNG of a cut-out given as RGBA whose invisible pixels are black (alpha 0
 * included), so the removed background is runs of zeros that compress to almost nothing.
 * Every row gets the Up filter (the row above subtracted), which halves a photo's bytes
 * before compression has even started; `fast` then compresses with fdeflate, a deflate made
 * for filtered image rows: faster and smaller than libvips' zlib at level 1 without filter
 * (docs/benchmarks.md has the figures).
 *
 * @example const png = await encodePng(rgba)
 */
export async function encodePng(cutout: RawImage, compression: PngCompression = DEFAULT_PNG_COMPRESSION): Promise<Buffer> {
  if (cutout.channels !== 4) throw new Error(`encodePng needs RGBA, got ${cutout.channels} channels`);
  const png = await encodeWithTransformer(cutout, compression === 'small' ? CompressionType.Default : CompressionType.Fast);
  // The Transformer keeps its own copy of the pixels (4 bytes a pixel) until V8 collects it,
  // and V8 is not told about that memory, so under load the copies piled up by the hundreds
  // of megabytes (docs/benchmarks.md). It is garbage now, still young: a scavenge frees it.
  collectYoungGarbage({ type: 'minor' });
  return png;
}

/** The encode itself, in a function of its own so that no frame of encodePng still holds the Transformer. */
function encodeWithTransformer(cutout: RawImage, compressionType: CompressionType): Promise<Buffer> {
  return Transformer.fromRgbaPixels(cutout.data, cutout.width, cutout.height).png({ compressionType, filterType: FilterType.Up });
}

/** V8's `gc`, which `--expose-gc` gives to contexts made after it is set. */
const collectYoungGarbage = ((): ((options: { type: 'minor' }) => void) => {
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as (options: { type: 'minor' }) => void;
})();

/**
 * The settings of the other encodings, chosen from their measured cost and size
 * (docs/benchmarks.md, "Encoding WebP and JPEG").
 */
const WEBP = { quality: 80, effort: 2 } as const;
const JPEG = { quality: 90, mozjpeg: false } as const;

/**
 * The answer's bytes in the format the request chose. RGBA for PNG and WebP (4 channels;
 * WebP keeps the alpha exactly, lossless); RGB or RGBA for JPEG, whose alpha must be opaque
 * (the steps before flatten it onto the background); one channel for a mask (`channels:
 * alpha`): PNG and WebP keep it exactly (WebP losslessly), JPEG as greyscale.
 *
 * @example const bytes = await encodeAnswer(cutout, 'webp')
 */
export async function encodeAnswer(image: RawImage, format: AnswerFormat, pngCompression: PngCompression = DEFAULT_PNG_COMPRESSION): Promise<Buffer> {
  if (format === 'png' && image.channels === 4) return encodePng(image, pngCompression);
  const raw = sharp(image.data, { raw: { width: image.width, height: image.height, channels: image.channels } });
  // A one-channel image would be written as sRGB unless told to stay grey.
  const pipeline = image.channels === 1 ? raw.toColourspace('b-w') : raw;
  if (format === 'png') return pipeline.png({ compressionLevel: pngCompression === 'small' ? 6 : 1, adaptiveFiltering: false }).toBuffer();
  if (format === 'webp') return (image.channels === 1 ? pipeline.webp({ lossless: true, effort: WEBP.effort }) : pipeline.webp(WEBP)).toBuffer();
  return (image.channels === 4 ? pipeline.removeAlpha() : pipeline).jpeg(JPEG).toBuffer();
}
