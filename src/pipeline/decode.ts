import sharp, { type Sharp } from 'sharp';
import { CutoutError } from '../errors.js';
import type { RawImage } from '../image/raw-image.js';
import { sniffImageFormat, type ImageFormat } from './sniff-format.js';

/**
 * Opens the bytes with sharp after checking they are an accepted format. The pixel limit is
 * enforced from the header, before any pixel is decoded. Only the first frame of an
 * animation is read; EXIF orientation is applied; transparency is flattened on white, and
 * every colour space (greyscale, CMYK, 16-bit, palette) ends as 8-bit sRGB.
 */
function open(bytes: Uint8Array, maxPixels: number): { format: ImageFormat; pipeline: Sharp } {
  const format = sniffImageFormat(bytes);
  if (!format) {
    throw new CutoutError('unsupported_image_format', `The bytes are not a JPEG, PNG, WebP, GIF, TIFF or AVIF image (${describeStart(bytes)}).`);
  }
  const pipeline = sharp(bytes, { limitInputPixels: maxPixels, failOn: 'error' })
    .autoOrient()
    .flatten({ background: '#ffffff' })
    .toColourspace('srgb');
  return { format, pipeline };
}

async function decodeWith(bytes: Uint8Array, maxPixels: number, shape: (pipeline: Sharp) => Sharp): Promise<RawImage> {
  const { format, pipeline } = open(bytes, maxPixels);
  try {
    const { data, info } = await shape(pipeline).raw({ depth: 'uchar' }).toBuffer({ resolveWithObject: true });
    return { data, width: info.width, height: info.height, channels: info.channels as RawImage['channels'] };
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    // libjpeg refuses sides over 65500 pixels before sharp's own limit is checked.
    if (/exceeds pixel limit|Maximum supported image dimension/i.test(message)) {
      throw new CutoutError('too_many_pixels', `The image has more than ${maxPixels} pixels.`, { cause: error });
    }
    throw new CutoutError('image_decode_failed', `The ${format.toUpperCase()} image could not be decoded; it may be corrupt or truncated.`, { cause: error });
  }
}

/**
 * First stage, for the model: the picture stretched to `size × size` RGB straight from the
 * decoder, so a large JPEG is shrunk while it is decoded (shrink-on-load) instead of being
 * decoded at full size first. Also the check that the bytes are an image Cutout takes:
 * errors are CutoutErrors (415 unsupported_image_format, 422 too_many_pixels or
 * image_decode_failed).
 *
 * @example const modelInput = await decodeForModel(bytes, { maxPixels: 50e6, size: 1024 })
 */
export function decodeForModel(bytes: Uint8Array, options: { maxPixels: number; size: number }): Promise<RawImage> {
  return decodeWith(bytes, options.maxPixels, (pipeline) => pipeline.resize(options.size, options.size, { fit: 'fill' }));
}

/**
 * First stage, for the result: the picture at full size, oriented, 8-bit sRGB, 3 channels;
 * with `opaqueAlpha`, 4 channels whose alpha is 255 everywhere, for the refinement to write
 * its alpha into, so the answer's RGBA needs no separate join before the encode.
 *
 * @example const { width, height } = await decodeImage(bytes, { maxPixels: 50e6 })
 */
export function decodeImage(bytes: Uint8Array, options: { maxPixels: number; opaqueAlpha?: boolean }): Promise<RawImage> {
  return decodeWith(bytes, options.maxPixels, (pipeline) => (options.opaqueAlpha ? pipeline.ensureAlpha(1) : pipeline));
}

function describeStart(bytes: Uint8Array): string {
  if (bytes.length === 0) return 'the body is empty';
  const start = Buffer.from(bytes.subarray(0, 256)).toString('latin1');
  if (/^\s*(<\?xml[^>]*>\s*)?(<!--[\s\S]*?-->\s*)*<(svg|!DOCTYPE svg)/i.test(start)) return 'it looks like SVG';
  if (start.startsWith('%PDF')) return 'it looks like PDF';
  return `it starts with bytes ${Buffer.from(bytes.subarray(0, 4)).toString('hex')}`;
}
