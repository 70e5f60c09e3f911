import sharp from 'sharp';
import type { RawImage } from '../image/raw-image.js';
import type { AnswerSpec } from './answer-spec.js';
import { alphaChannel, visibleBox } from './frame.js';

/** How far a shadow falls and how soft it is, as fractions of the subject's height. */
const KINDS = {
  drop: { dx: 0.01, dy: 0.02, squash: 1, blur: 0.015 },
  '3D': { dx: 0.03, dy: 0.03, squash: 1, blur: 0.025 },
  // A car stands on the ground: its shadow is its own silhouette flattened under its wheels.
  car: { dx: 0, dy: 0, squash: 0.12, blur: 0.02 },
} as const;

/**
 * A shadow under the subject, cast from its own alpha: the alpha moved down (and for `car`
 * flattened onto the subject's bottom edge), blurred, darkened to black at `opacity`, and laid
 * under the cut-out. The cut-out keeps its size; the shadow is cut at its edges. Nothing
 * visible, nothing cast.
 *
 * @example await castShadow(cutout, { opacity: 0.5, kind: 'drop' })
 */
export async function castShadow(cutout: RawImage, shadow: NonNullable<AnswerSpec['shadow']>): Promise<RawImage> {
  const subject = visibleBox(cutout);
  if (!subject || cutout.channels !== 4) return cutout;
  const { width, height } = cutout;
  const kind = KINDS[shadow.kind];
  const alpha = alphaChannel(cutout);
  const raw = (image: RawImage) => ({ raw: { width: image.width, height: image.height, channels: image.channels } });
  // sharp turns one raw channel into sRGB on output; extractChannel(0) keeps it one.
  // The silhouette, squashed towards the subject's bottom edge and moved by the offset.
  const squashedHeight = Math.max(1, Math.round(height * kind.squash));
  const dx = Math.round(kind.dx * subject.height);
  const bottom = subject.top + subject.height;
  const dy = Math.round(kind.dy * subject.height) + Math.round(bottom - bottom * kind.squash);
  const squashed = await sharp(alpha.data, raw(alpha)).resize(width, squashedHeight, { fit: 'fill' }).extractChannel(0).raw().toBuffer();
  const moved = new Uint8Array(width * height);
  for (let y = 0; y < squashedHeight; y++) {
    const to = y + dy;
    if (to < 0 || to >= height) continue;
    for (let x = 0; x < width; x++) {
      const from = x - dx;
      if (from >= 0 && from < width) moved[to * width + x] = squashed[y * width + from];
    }
  }
  const sigma = Math.max(0.5, kind.blur * subject.height);
  const blurred = await sharp(moved, { raw: { width, height, channels: 1 } }).blur(sigma).extractChannel(0).raw().toBuffer();
  const layer = new Uint8Array(width * height * 4);
  for (let p = 0; p < width * height; p++) layer[4 * p + 3] = Math.round(blurred[p] * shadow.opacity);
  const { data, info } = await sharp(layer, { raw: { width, height, channels: 4 } })
    .composite([{ input: Buffer.from(cutout.data.buffer, cutout.data.byteOffset, cutout.data.byteLength), raw: { width, height, channels: 4 } }])
    .raw({ depth: 'uchar' })
    .toBuffer({ resolveWithObject: true });
  return { data, width: info.width, height: info.height, channels: 4 };
}
