import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { CompressionType, FilterType, Transformer } from '@napi-rs/image';
import sharp from 'sharp';
import type { RawImage } from '../image/raw-image.js';
import type { AnswerFormat } from './answer-spec.js';

/**
 * How hard the answers' PNGs are compressed (CUTOUT_PNG_COMPRESSION): `fast` (fdeflate, the
 * default) or `small` (zlib's default level: smaller files for several times the time;
 * docs/internals/performance.md has the figures).
 */
export type PngCompression = 'fast' | 'small';
export const DEFAULT_PNG_COMPRESSION: PngCompression = 'fast';

/**
 * Last stage: the PNG of a cut-out given as RGBA whose invisible pixels are black (alpha 0
 * included), so the removed background is runs of zeros that compress to almost nothing.
 * Every row gets the Up filter (the row above subtracted), which halves a photo's bytes
 * before compression has even started; `fast` then compresses with fdeflate, a deflate made
 * for filtered image rows: faster and smaller than libvips' zlib at level 1 without filter
 * (docs/internals/performance.md has the figures).
 *
 * @example const png = await encodePng(rgba)
 */
export async function encodePng(cutout: RawImage, compression: PngCompression = DEFAULT_PNG_COMPRESSION): Promise<Buffer> {
  const png = await encodeWithTransformer(cutout, compression === 'small' ? CompressionType.Default : CompressionType.Fast);
  // The Transformer keeps its own copy of the pixels until V8 collects it, and V8 is not told
  // about that memory, so under load the copies piled up by the hundreds of megabytes
  // (docs/internals/performance.md). It is garbage now, still young: a scavenge frees it.
  collectYoungGarbage({ type: 'minor' });
  return png;
}

/**
 * The encode itself, in a function of its own so that no frame of encodePng still holds the
 * Transformer. RGBA goes in as pixels; grey (a mask) and RGB (a cut-out on an opaque
 * background) as the PGM or PPM the Transformer reads, so they are written as one- and
 * three-channel PNGs.
 */
function encodeWithTransformer(image: RawImage, compressionType: CompressionType): Promise<Buffer> {
  const { data, width, height, channels } = image;
  const transformer =
    channels === 4
      ? Transformer.fromRgbaPixels(data, width, height)
      : new Transformer(Buffer.concat([Buffer.from(`${channels === 1 ? 'P5' : 'P6'}\n${width} ${height}\n255\n`), data]));
  return transformer.png({ compressionType, filterType: FilterType.Up });
}

/** V8's `gc`, which `--expose-gc` gives to contexts made after it is set. */
const collectYoungGarbage = ((): ((options: { type: 'minor' }) => void) => {
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as (options: { type: 'minor' }) => void;
})();

/**
 * The lossy encodings' settings, chosen from their measured cost, size and error
 * (docs/internals/performance.md, "Encoding WebP and JPEG"): WebP's effort 0, because every higher one
 * costs much more time for the bytes it saves; JPEG without mozjpeg, which costs several
 * times as long; a mask as JPEG at quality 100, so that no level is off by more than 2.
 */
const WEBP = { quality: 80, effort: 0 } as const;
const WEBP_MASK = { lossless: true, effort: 0 } as const;
const JPEG = { quality: 90, mozjpeg: false } as const;
const JPEG_MASK = { quality: 100, mozjpeg: false } as const;

/**
 * The answer's bytes in the format the request chose, from RGBA (a cut-out), RGB (a cut-out
 * on an opaque background) or one channel (a mask, `channels: alpha`). PNG is exact; WebP
 * keeps the alpha and a mask exactly (losslessly) and the colours at quality 80; JPEG has no
 * alpha, so an RGBA image must be opaque by then (the steps before lay it on a background),
 * and a mask is a greyscale JPEG within 2 levels of the PNG's.
 *
 * @example const bytes = await encodeAnswer(cutout, 'webp')
 */
export async function encodeAnswer(image: RawImage, format: AnswerFormat, pngCompression: PngCompression = DEFAULT_PNG_COMPRESSION): Promise<Buffer> {
  if (format === 'png') return encodePng(image, pngCompression);
  const raw = sharp(image.data, { raw: { width: image.width, height: image.height, channels: image.channels } });
  // A one-channel image would be written as sRGB unless told to stay grey.
  const pipeline = image.channels === 1 ? raw.toColourspace('b-w') : raw;
  if (format === 'webp') return pipeline.webp(image.channels === 1 ? WEBP_MASK : WEBP).toBuffer();
  return (image.channels === 4 ? pipeline.removeAlpha() : pipeline).jpeg(image.channels === 1 ? JPEG_MASK : JPEG).toBuffer();
}
