import sharp from 'sharp';
import type { RawImage } from './raw-image.js';

const rawOf = (image: RawImage) => ({ raw: { width: image.width, height: image.height, channels: image.channels } });
const bufferOf = (image: RawImage) => Buffer.from(image.data.buffer, image.data.byteOffset, image.data.byteLength);

/**
 * Stretches a model-sized mask to the picture's size with sharp (bilinear: the mask is
 * smooth, and a sharper kernel costs half as much again at 10 megapixels). A one-channel
 * raw input would come back as three channels unless told otherwise, hence `b-w`.
 */
export async function scaleMask(mask: RawImage, width: number, height: number): Promise<RawImage> {
  if (mask.width === width && mask.height === height) return mask;
  const data = await sharp(mask.data, rawOf(mask))
    .resize(width, height, { fit: 'fill', kernel: 'linear' })
    .toColourspace('b-w')
    .raw()
    .toBuffer();
  return { data, width, height, channels: 1 };
}

/**
 * Fourth stage without refinement: the original RGB pixels with the model's mask, scaled to
 * full size, as alpha, in one RGBA image for `encodePng`. Pixels whose alpha is 0 are
 * invisible, so their colour is set to black: the removed background then compresses to
 * almost nothing.
 */
export async function composeCutout(image: RawImage, mask: RawImage): Promise<RawImage> {
  const alpha = await scaleMask(mask, image.width, image.height);
  const visible = await sharp(alpha.data, rawOf(alpha)).threshold(1).toColourspace('b-w').raw().toBuffer();
  const data = await sharp(image.data, rawOf(image)).boolean(visible, 'and', rawOf(alpha)).joinChannel(bufferOf(alpha), rawOf(alpha)).raw().toBuffer();
  return { data, width: image.width, height: image.height, channels: 4 };
}
