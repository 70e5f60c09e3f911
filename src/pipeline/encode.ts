import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { CompressionType, FilterType, Transformer } from '@napi-rs/image';
import type { RawImage } from '../image/raw-image.js';

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
