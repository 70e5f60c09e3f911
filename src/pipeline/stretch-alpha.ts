import sharp from 'sharp';
import { SUBJECT_ALPHA, type VisibleBounds } from '../image/box.js';
import type { RawImage } from '../image/raw-image.js';

/**
 * Stretches a model-sized mask to the picture's size with sharp (bilinear: the mask is
 * smooth, and a sharper kernel costs more at full size for nothing visible). A one-channel
 * raw input would come back as three channels unless told otherwise, hence `b-w`.
 */
export async function scaleMask(mask: RawImage, width: number, height: number): Promise<RawImage> {
  if (mask.width === width && mask.height === height) return mask;
  const data = await sharp(mask.data, { raw: { width: mask.width, height: mask.height, channels: mask.channels } })
    .resize(width, height, { fit: 'fill', kernel: 'linear' })
    .toColourspace('b-w')
    .raw()
    .toBuffer();
  return { data, width, height, channels: 1 };
}

/**
 * The finishing's alpha step without refinement: the model's mask stretched to the photo's
 * size becomes the photo's alpha, and the colours stay the original ones. Pixels whose alpha
 * is 0 are invisible and are set to black, so the removed background compresses to almost
 * nothing. Writes into the photo, which must be RGBA (`decodePhoto`), and returns it;
 * `visible`, when given, learns where the alpha is at least SUBJECT_ALPHA.
 */
export async function stretchAlpha(photo: RawImage, mask: RawImage, visible?: VisibleBounds): Promise<RawImage> {
  if (photo.channels !== 4) throw new Error(`stretchAlpha needs an RGBA photo, got ${photo.channels} channels`);
  const alpha = (await scaleMask(mask, photo.width, photo.height)).data;
  const { data, width, height } = photo;
  for (let y = 0, p = 0; y < height; y++) {
    let first = -1;
    let last = -1;
    for (let x = 0; x < width; x++, p++) {
      const value = alpha[p];
      const j = 4 * p;
      data[j + 3] = value;
      if (value === 0) data[j] = data[j + 1] = data[j + 2] = 0;
      else if (value >= SUBJECT_ALPHA) {
        if (first < 0) first = x;
        last = x;
      }
    }
    if (first >= 0) visible?.addRun(y, first, last + 1);
  }
  return photo;
}
