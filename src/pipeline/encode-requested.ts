import { zipSync } from 'fflate';
import type { RawImage } from '../image/raw-image.js';
import type { EncodedFormat, RequestedFormat } from './answer-spec.js';
import { encodeAnswer, type PngCompression } from './encode.js';
import { alphaChannel } from './frame.js';

/**
 * The answer's bytes in the encoding a request named, the two that are decided here included:
 * - `auto`: PNG when the result has a pixel that is not opaque, else JPEG (remove.bg's rule);
 * - `zip`: remove.bg's archive, `color.jpg` (the colours, as a JPEG) and `alpha.png` (the
 *   mask, a greyscale PNG), which its clients join into a PNG themselves.
 * Every other format is {@link encodeAnswer}'s, byte for byte.
 *
 * @example const { bytes, format } = await encodeRequested(cutout, 'auto') // format: 'png' or 'jpeg'
 */
export async function encodeRequested(image: RawImage, format: RequestedFormat, pngCompression?: PngCompression): Promise<{ bytes: Buffer; format: EncodedFormat }> {
  if (format === 'zip') return { bytes: await encodeZip(image, pngCompression), format };
  const chosen = format === 'auto' ? (hasTransparency(image) ? 'png' : 'jpeg') : format;
  return { bytes: await encodeAnswer(image, chosen, pngCompression), format: chosen };
}

/** True when the image has an alpha channel and some pixel of it is below 255. */
export function hasTransparency(image: RawImage): boolean {
  if (image.channels !== 4) return false;
  for (let j = 3; j < image.data.length; j += 4) if (image.data[j] !== 255) return true;
  return false;
}

/**
 * The zip archive: the colours without their alpha as a JPEG, and the alpha (opaque
 * everywhere for an image without one) as a PNG. Both are compressed already, so the
 * archive stores them as they are (level 0), which costs no time.
 */
async function encodeZip(image: RawImage, pngCompression?: PngCompression): Promise<Buffer> {
  const alpha = image.channels === 4 ? alphaChannel(image) : { data: new Uint8Array(image.width * image.height).fill(255), width: image.width, height: image.height, channels: 1 as const };
  const [color, mask] = await Promise.all([encodeAnswer(image, 'jpeg'), encodeAnswer(alpha, 'png', pngCompression)]);
  const archive = zipSync({ 'color.jpg': [color, { level: 0 }], 'alpha.png': [mask, { level: 0 }] });
  return Buffer.from(archive.buffer, archive.byteOffset, archive.byteLength);
}
