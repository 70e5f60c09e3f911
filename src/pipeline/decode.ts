import sharp, { type Sharp } from 'sharp';
import { CutoutError } from '../errors.js';
import type { Box } from '../image/box.js';
import type { RawImage } from '../image/raw-image.js';
import type { Length, RegionOfInterest } from './answer-spec.js';
import { isDecodedPixels, type DecodedPixels, type PhotoInput } from './photo-input.js';
import { isHeif, sniffImageFormat, type ImageFormat } from './sniff-format.js';

/**
 * Opens the photo with sharp: encoded bytes after checking they are an accepted format,
 * pixels decoded already (an HEIC's) as the raw RGBA they are. The pixel limit is enforced
 * from the header, before any pixel is decoded. Only the first frame of an animation is
 * read; EXIF orientation is applied; transparency is flattened on white, and every colour
 * space (greyscale, CMYK, 16-bit, palette) ends as 8-bit sRGB.
 */
function open(photo: PhotoInput, maxPixels: number): { format: ImageFormat | 'heic'; pipeline: Sharp } {
  if (isDecodedPixels(photo)) {
    const { data, width, height, channels } = pixelsWithin(photo, maxPixels).image;
    const pipeline = sharp(data, { raw: { width, height, channels }, limitInputPixels: maxPixels }).flatten({ background: '#ffffff' }).toColourspace('srgb');
    return { format: 'heic', pipeline };
  }
  const format = sniffImageFormat(photo);
  if (!format) {
    throw new CutoutError('unsupported_image_format', `The bytes are not a JPEG, PNG, WebP, GIF, TIFF, AVIF or HEIC image (${describeStart(photo)}).`);
  }
  const pipeline = sharp(photo, { limitInputPixels: maxPixels, failOn: 'error' })
    .autoOrient()
    .flatten({ background: '#ffffff' })
    .toColourspace('srgb');
  return { format, pipeline };
}

/** Decoded pixels, checked against the pixel limit as an encoded photo's header is. */
function pixelsWithin(photo: DecodedPixels, maxPixels: number): DecodedPixels {
  if (photo.image.width * photo.image.height > maxPixels) throw new CutoutError('too_many_pixels', `The image has more than ${maxPixels} pixels.`);
  return photo;
}

async function decodeWith(photo: PhotoInput, maxPixels: number, shape: (pipeline: Sharp) => Sharp): Promise<RawImage> {
  const { format, pipeline } = open(photo, maxPixels);
  try {
    const { data, info } = await shape(pipeline).raw({ depth: 'uchar' }).toBuffer({ resolveWithObject: true });
    return { data, width: info.width, height: info.height, channels: info.channels as RawImage['channels'] };
  } catch (error) {
    throw decodeError(error, format, maxPixels);
  }
}

function decodeError(error: unknown, format: ImageFormat | 'heic', maxPixels: number): CutoutError {
  const message = error instanceof Error ? error.message : String(error);
  // libjpeg refuses sides over 65500 pixels before sharp's own limit is checked.
  if (/exceeds pixel limit|Maximum supported image dimension/i.test(message)) {
    return new CutoutError('too_many_pixels', `The image has more than ${maxPixels} pixels.`, { cause: error });
  }
  return new CutoutError('image_decode_failed', `The ${format.toUpperCase()} image could not be decoded; it may be corrupt or truncated.`, { cause: error });
}

/**
 * An HEIF file's size and EXIF block, read from its header by sharp, whose libheif parses
 * HEIF though it cannot decode HEVC (the HEIC threads decode it, `heic-thread.ts`); undefined
 * for a header it cannot read.
 */
export async function heifHeader(heic: Uint8Array): Promise<{ width: number; height: number; exif?: Uint8Array } | undefined> {
  try {
    const { width, height, exif } = await sharp(heic).metadata();
    return { width, height, exif };
  } catch {
    // A header sharp cannot read: libheif may still decode the pixels, and the photo is taken as it stands.
    return undefined;
  }
}

/**
 * An encoded photo's size from its header, before anything waits or decodes: sharp's
 * metadata, or for an HEIC/HEIF the header {@link heifHeader} reads (undefined when sharp
 * cannot read it: libheif may still decode it). Refuses as the decode would: 415
 * unsupported_image_format, 422 too_many_pixels or image_decode_failed.
 */
export async function headerSize(photo: Uint8Array, maxPixels: number): Promise<{ width: number; height: number; heic: boolean } | undefined> {
  if (!isHeif(photo)) return { ...(await orientedSize(photo, maxPixels)), heic: false };
  const header = await heifHeader(photo);
  if (header && header.width * header.height > maxPixels) throw new CutoutError('too_many_pixels', `The image has more than ${maxPixels} pixels.`);
  return header && { width: header.width, height: header.height, heic: true };
}

/** The photo's width and height once its EXIF orientation is applied, from its header. */
export async function orientedSize(photo: PhotoInput, maxPixels: number): Promise<{ width: number; height: number }> {
  if (isDecodedPixels(photo)) {
    const { width, height } = pixelsWithin(photo, maxPixels).image;
    return { width, height };
  }
  const { format, pipeline } = open(photo, maxPixels);
  try {
    const { autoOrient } = await pipeline.metadata();
    if (autoOrient.width * autoOrient.height > maxPixels) throw new CutoutError('too_many_pixels', `The image has more than ${maxPixels} pixels.`);
    return autoOrient;
  } catch (error) {
    throw error instanceof CutoutError ? error : decodeError(error, format, maxPixels);
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
export function decodeForModel(photo: PhotoInput, options: { maxPixels: number; size: number; region?: Box }): Promise<RawImage> {
  const { region, size } = options;
  return decodeWith(photo, options.maxPixels, (pipeline) => (region ? pipeline.extract(region) : pipeline).resize(size, size, { fit: 'fill' }));
}

/** A region of interest with no pixel in the photo: a 400 invalid_request, told apart for the remove.bg-compatible routes (`roi_region_empty`). */
export class EmptyRegionError extends CutoutError {
  constructor(detail: string) {
    super('invalid_request', detail);
    this.name = 'EmptyRegionError';
  }
}

/** A region of interest resolved against the photo, and what the model sees of the photo for it. */
export interface ResolvedRegion {
  /** The region, in the photo's (oriented) pixels: only what lies inside may be foreground. */
  region: Box;
  /**
   * The part of the photo the model sees: the region grown on its shorter side, about its
   * centre and within the photo, to be as square as the model's input, so that the picture
   * is not squeezed more than the whole photo would be; its longer side, which sets the
   * resolution, is the region's own.
   */
  view: Box;
}

/**
 * A region of interest in the photo's (oriented) pixels, read from the header: percentages
 * are of the photo's width and height, and a region reaching past the photo is cut to it.
 * An empty region, or one wholly outside the photo, is 400 invalid_request.
 *
 * @example await resolveRegion(bytes, parsedRoi, 50e6) // { region: { left: 64, top: 0, width: 512, height: 480 }, view: … }
 */
export async function resolveRegion(photo: PhotoInput, roi: RegionOfInterest, maxPixels: number): Promise<ResolvedRegion> {
  const { width, height } = await orientedSize(photo, maxPixels);
  const at = (length: Length, side: number) => (length.unit === '%' ? (length.value / 100) * side : length.value);
  const left = Math.max(0, Math.floor(at(roi.x1, width)));
  const top = Math.max(0, Math.floor(at(roi.y1, height)));
  const right = Math.min(width, Math.ceil(at(roi.x2, width)));
  const bottom = Math.min(height, Math.ceil(at(roi.y2, height)));
  if (right <= left || bottom <= top) {
    throw new EmptyRegionError(`roi covers no pixel of the ${width}×${height} photo: give "x1 y1 x2 y2" with x1 < x2 and y1 < y2, inside the photo.`);
  }
  const region = { left, top, width: right - left, height: bottom - top };
  const side = Math.max(region.width, region.height);
  const grow = (start: number, length: number, limit: number) => {
    const grown = Math.min(side, limit);
    return { start: Math.min(Math.max(0, start - Math.floor((grown - length) / 2)), limit - grown), length: grown };
  };
  const x = grow(region.left, region.width, width);
  const y = grow(region.top, region.height, height);
  return { region, view: { left: x.start, top: y.start, width: x.length, height: y.length } };
}

/** The photo for the finishing steps: RGBA, its alpha opaque, and the size it has in full. */
export interface DecodedPhoto {
  image: RawImage;
  /** The photo's oriented size; `image` is smaller when it was decoded to fit inside a size. */
  fullWidth: number;
  fullHeight: number;
}

/**
 * The finish thread's decode: the photo at full size as RGBA with an opaque alpha for the
 * alpha step to write (see {@link decodeImage}); or, with `fitInside`, already scaled down to
 * fit inside that size (never up), straight from the decoder, for an answer that will be no
 * larger: the steps after it then work on a fraction of the pixels. Opaque pixels decoded
 * already are that photo as they stand, and are taken without a copy.
 */
export async function decodePhoto(photo: PhotoInput, options: { maxPixels: number; fitInside?: { width?: number; height?: number } }): Promise<DecodedPhoto> {
  const { maxPixels, fitInside } = options;
  if (!fitInside && isDecodedPixels(photo) && photo.opaque) {
    const { image } = pixelsWithin(photo, maxPixels);
    return { image, fullWidth: image.width, fullHeight: image.height };
  }
  if (!fitInside) {
    const image = await decodeImage(photo, { maxPixels, opaqueAlpha: true });
    return { image, fullWidth: image.width, fullHeight: image.height };
  }
  const full = await orientedSize(photo, maxPixels);
  const image = await decodeWith(photo, maxPixels, (pipeline) => pipeline.resize({ ...fitInside, fit: 'inside', withoutEnlargement: true }).ensureAlpha(1));
  return { image, fullWidth: full.width, fullHeight: full.height };
}

/**
 * A background image for the finishing: RGBA, scaled to cover `width × height` (centred, the
 * overflow cut), with the same checks as the photo's own decode.
 */
export async function decodeBackground(image: PhotoInput, options: { maxPixels: number; width: number; height: number }): Promise<RawImage> {
  const { format, pipeline } = open(image, options.maxPixels);
  try {
    const { data, info } = await pipeline.resize(options.width, options.height, { fit: 'cover' }).ensureAlpha(1).raw({ depth: 'uchar' }).toBuffer({ resolveWithObject: true });
    return { data, width: info.width, height: info.height, channels: 4 };
  } catch (error) {
    throw decodeError(error, format, options.maxPixels);
  }
}

/**
 * First stage, for the result: the picture at full size, oriented, 8-bit sRGB, 3 channels;
 * with `opaqueAlpha`, 4 channels whose alpha is 255 everywhere, for the refinement to write
 * its alpha into, so the answer's RGBA needs no separate join before the encode.
 *
 * @example const { width, height } = await decodeImage(bytes, { maxPixels: 50e6 })
 */
export function decodeImage(photo: PhotoInput, options: { maxPixels: number; opaqueAlpha?: boolean }): Promise<RawImage> {
  return decodeWith(photo, options.maxPixels, (pipeline) => (options.opaqueAlpha ? pipeline.ensureAlpha(1) : pipeline));
}

function describeStart(bytes: Uint8Array): string {
  if (bytes.length === 0) return 'the body is empty';
  const start = Buffer.from(bytes.subarray(0, 256)).toString('latin1');
  if (/^\s*(<\?xml[^>]*>\s*)?(<!--[\s\S]*?-->\s*)*<(svg|!DOCTYPE svg)/i.test(start)) return 'it looks like SVG';
  if (start.startsWith('%PDF')) return 'it looks like PDF';
  return `it starts with bytes ${Buffer.from(bytes.subarray(0, 4)).toString('hex')}`;
}
