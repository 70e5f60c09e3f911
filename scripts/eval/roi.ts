import type { Length, RegionOfInterest } from '../../src/pipeline/answer-spec.js';
import { cropBox } from '../../src/pipeline/frame.js';
import type { GreyImage } from './dataset.js';

/**
 * The `roi` a client who knew where the subject is would send: the box of the ground truth's
 * subject (every pixel above 0, the unlabelled band included) grown by `margin` on each side
 * as `crop_margin` grows a crop, cut to the picture. Undefined for a mask with no subject.
 *
 * @example groundTruthRoi(mask, { value: 10, unit: '%' }) // { x1: { value: 40, unit: 'px' }, … }
 */
export function groundTruthRoi(mask: GreyImage, margin: Length): RegionOfInterest | undefined {
  let [left, top, right, bottom] = [Infinity, Infinity, -Infinity, -Infinity];
  for (let y = 0; y < mask.height; y++) {
    for (let x = 0; x < mask.width; x++) {
      if (mask.data[y * mask.width + x] === 0) continue;
      left = Math.min(left, x);
      right = Math.max(right, x + 1);
      top = Math.min(top, y);
      bottom = Math.max(bottom, y + 1);
    }
  }
  if (right < left) return undefined;
  const box = cropBox({ left, top, width: right - left, height: bottom - top }, margin);
  const px = (value: number): Length => ({ value, unit: 'px' });
  return {
    x1: px(Math.max(0, box.left)),
    y1: px(Math.max(0, box.top)),
    x2: px(Math.min(mask.width, box.left + box.width)),
    y2: px(Math.min(mask.height, box.top + box.height)),
  };
}
