/**
 * Decodes an HEIC/HEIF photo (what phones upload) with libheif compiled to WebAssembly (the
 * `libheif-js` package; nothing is downloaded) straight into memory shared between threads:
 * the first image of the file, as RGBA, with HEIF's rotation and mirroring (`irot`, `imir`,
 * where phones put the orientation) applied by libheif, and an EXIF Orientation the caller
 * found to count (`heif-orientation.ts`) applied here. Nothing is written in between: the
 * pixels libheif converts in its own memory are copied once, into the SharedArrayBuffer the
 * pipeline then reads (`photo-input.ts`). It holds its thread for seconds at 49 megapixels,
 * so it runs on an HEIC thread (`heic-worker.ts`), never on the event loop. libheif's memory
 * grows to the largest image it decoded and never shrinks: {@link decoderMemoryBytes} tells
 * how much it holds, for the thread's owner to end the thread when that is too much.
 */
import libheif from 'libheif-js/wasm-bundle.js';
import sharp from 'sharp';
import { CutoutError } from '../errors.js';
import type { DecodedPixels } from './photo-input.js';

const decodeFailed = (cause?: unknown) => new CutoutError('image_decode_failed', 'The HEIC image could not be decoded; it may be corrupt or truncated.', { cause });

/**
 * The file's first image as RGBA pixels in a SharedArrayBuffer, upright; refused past
 * `maxPixels` before its pixels are decoded (422 too_many_pixels), 422 image_decode_failed
 * when libheif cannot read it. `orientation` is the EXIF Orientation still to apply (1: none).
 *
 * @example const { image, opaque } = await decodeHeic(bytes, { maxPixels: 50e6, orientation: 1 })
 */
export async function decodeHeic(heic: Uint8Array, { maxPixels, orientation }: { maxPixels: number; orientation: number }): Promise<DecodedPixels> {
  const decoder = new libheif.HeifDecoder();
  const images = decoder.decode(heic);
  try {
    const [first] = images;
    if (!first) throw decodeFailed();
    const width = first.get_width();
    const height = first.get_height();
    if (width * height > maxPixels) throw new CutoutError('too_many_pixels', `The image has more than ${maxPixels} pixels.`);
    const data = new Uint8Array(new SharedArrayBuffer(width * height * 4));
    const shown = await new Promise((resolve) => first.display({ data, width, height }, resolve));
    if (!shown) throw decodeFailed();
    let opaque = true;
    for (let a = 3; a < data.length && opaque; a += 4) opaque = data[a] === 255;
    const image = { data, width, height, channels: 4 as const };
    return { image: orientation === 1 ? image : await orient(image, orientation), opaque };
  } finally {
    for (const image of images) image.free();
    decoder.decoder.delete();
  }
}

/** Bytes of WebAssembly memory libheif holds now: the most any image has needed so far. */
export function decoderMemoryBytes(): number {
  return libheif.HEAPU8.byteLength;
}

/**
 * sharp's turns and mirrorings for each EXIF Orientation (2 to 8), as `autoOrient` applies
 * them to a JPEG: raw pixels carry no EXIF for sharp to read. `test/heic.test.ts` checks each
 * against `autoOrient`.
 */
const ORIENTATIONS: Record<number, { angle: number; flip?: boolean; flop?: boolean }> = {
  2: { angle: 0, flop: true },
  3: { angle: 180 },
  4: { angle: 180, flop: true },
  5: { angle: 90, flip: true },
  6: { angle: 90 },
  7: { angle: 270, flip: true },
  8: { angle: 270 },
};

/**
 * RGBA pixels turned upright by an EXIF Orientation, into a new SharedArrayBuffer: the rare
 * file whose orientation only its EXIF gives (older encoders) pays one more copy.
 */
export async function orient(image: DecodedPixels['image'], orientation: number): Promise<DecodedPixels['image']> {
  const turn = ORIENTATIONS[orientation];
  if (!turn) return image;
  const { data, width, height } = image;
  const { data: turned, info } = await sharp(data, { raw: { width, height, channels: 4 } })
    .rotate(turn.angle)
    .flip(turn.flip ?? false)
    .flop(turn.flop ?? false)
    .raw()
    .toBuffer({ resolveWithObject: true });
  const shared = new Uint8Array(new SharedArrayBuffer(turned.length));
  shared.set(turned);
  return { data: shared, width: info.width, height: info.height, channels: 4 };
}
