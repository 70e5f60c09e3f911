import sharp, { type Sharp } from 'sharp';
import type { RawImage } from '../image/raw-image.js';
import type { Rgba } from './answer-spec.js';

const rawOf = (image: RawImage) => ({ raw: { width: image.width, height: image.height, channels: image.channels } });
const bufferOf = (image: RawImage) => Buffer.from(image.data.buffer, image.data.byteOffset, image.data.byteLength);

async function rawImage(pipeline: Sharp): Promise<RawImage> {
  const { data, info } = await pipeline.raw({ depth: 'uchar' }).toBuffer({ resolveWithObject: true });
  return { data, width: info.width, height: info.height, channels: info.channels as RawImage['channels'] };
}

/**
 * The image scaled down to fit inside `maxWidth × maxHeight`, its aspect ratio kept; the
 * image itself when it already fits. sharp premultiplies by the alpha while it resamples,
 * so the colours of invisible pixels do not bleed into the edge.
 */
export async function fitInside(image: RawImage, maxWidth?: number, maxHeight?: number): Promise<RawImage> {
  if ((maxWidth === undefined || image.width <= maxWidth) && (maxHeight === undefined || image.height <= maxHeight)) return image;
  return rawImage(sharp(image.data, rawOf(image)).resize({ width: maxWidth, height: maxHeight, fit: 'inside', withoutEnlargement: true }));
}

/**
 * The RGBA cut-out laid over a background: a colour (its alpha below 255 leaves the result
 * that transparent), or an opaque image of the same size. The blend is the usual "over", so a
 * semi-transparent edge takes its colour from the cut-out's cleaned foreground colours and
 * from the new background, never from the photo's old one. Over an opaque background the
 * result is RGB: it has no transparency left, and the encoders write three channels faster
 * and smaller than four.
 */
export async function overBackground(cutout: RawImage, background: { colour: Rgba } | { image: RawImage }): Promise<RawImage> {
  if ('colour' in background && background.colour[3] === 255) {
    // flatten is "over" an opaque colour, and drops the alpha, in one pass.
    return rawImage(sharp(bufferOf(cutout), rawOf(cutout)).flatten({ background: rgbaOf(background.colour) }));
  }
  const base =
    'colour' in background
      ? sharp({ create: { width: cutout.width, height: cutout.height, channels: 4, background: rgbaOf(background.colour) } })
      : sharp(background.image.data, rawOf(background.image));
  const composed = await rawImage(base.composite([{ input: bufferOf(cutout), ...rawOf(cutout) }]));
  return 'colour' in background ? composed : withoutAlpha(composed);
}

/** The RGB of an RGBA image whose alpha is opaque. */
function withoutAlpha(image: RawImage): RawImage {
  const data = new Uint8Array(image.width * image.height * 3);
  for (let p = 0, i = 0, j = 0; p < image.width * image.height; p++, i += 4, j += 3) {
    data[j] = image.data[i];
    data[j + 1] = image.data[i + 1];
    data[j + 2] = image.data[i + 2];
  }
  return { data, width: image.width, height: image.height, channels: 3 };
}

function rgbaOf([r, g, b, a]: Rgba): { r: number; g: number; b: number; alpha: number } {
  return { r, g, b, alpha: a / 255 };
}
