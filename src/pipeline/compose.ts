import sharp from 'sharp';
import type { RawImage } from './raw-image.js';

/** What the pipeline has decided before encoding: each pixel's colour and its alpha. */
export interface Cutout {
  /** The picture's own pixels, 3 channels. */
  colour: RawImage;
  /** One channel at the colour's size: 255 keeps a pixel, 0 removes it. */
  alpha: RawImage;
  /** True when every pixel whose alpha is 0 is already black in `colour` (the refine stage writes them so). */
  invisibleBlack?: boolean;
}

/**
 * Stretches a model-sized mask to the picture's size with sharp (bilinear: the mask is
 * smooth, and a sharper kernel costs half as much again at 10 megapixels). A one-channel
 * raw input would come back as three channels unless told otherwise, hence `b-w`.
 */
export async function scaleMask(mask: RawImage, width: number, height: number): Promise<RawImage> {
  if (mask.width === width && mask.height === height) return mask;
  const data = await sharp(mask.data, { raw: { width: mask.width, height: mask.height, channels: 1 } })
    .resize(width, height, { fit: 'fill', kernel: 'linear' })
    .toColourspace('b-w')
    .raw()
    .toBuffer();
  return { data, width, height, channels: 1 };
}

/**
 * Fourth stage: the original pixels with the model's mask, scaled to full size, as alpha.
 */
export async function composeCutout(image: RawImage, mask: RawImage): Promise<Cutout> {
  return { colour: image, alpha: await scaleMask(mask, image.width, image.height) };
}
