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
 * that transparent), or an RGBA image of the same size. The blend is the usual "over", so a
 * semi-transparent edge takes its colour from the cut-out's cleaned foreground colours and
 * from the new background, never from the photo's old one.
 */
export async function overBackground(cutout: RawImage, background: { colour: Rgba } | { image: RawImage }): Promise<RawImage> {
  const base =
    'colour' in background
      ? sharp({ create: { width: cutout.width, height: cutout.height, channels: 4, background: rgbaOf(background.colour) } })
      : sharp(background.image.data, rawOf(background.image));
  return rawImage(base.composite([{ input: bufferOf(cutout), ...rawOf(cutout) }]));
}

function rgbaOf([r, g, b, a]: Rgba): { r: number; g: number; b: number; alpha: number } {
  return { r, g, b, alpha: a / 255 };
}
