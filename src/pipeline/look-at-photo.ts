import type { RawImage } from '../image/raw-image.js';
import type { Segmenter } from '../model/segmenter.js';
import { needsSecondLook } from './second-look.js';
import { fuseViews, mirrorImage, QUALITY_VIEWS, renderView, type Quality, type Segmentation } from './views.js';

/** The model step's answer: the mask and its doubt, and how many looks (model passes) it took. */
export interface Looked extends Segmentation {
  looks: 1 | 2;
}

/**
 * The model step of one photo at `quality` (`views.ts`): its views through `segmenter`, their
 * masks fused. `fast` and `best` show the model every view of their quality in one call.
 * `auto` shows it the photo, and the mirror image only when that first look is doubtful
 * (`second-look.ts`, or `secondLook` in tests); then the two masks are fused exactly as `best`
 * fuses them, the first look's mask reused, so the doubtful photo costs one more pass, not two.
 * The picture's pixels are handed to the model, as `Segmenter.segment` says.
 *
 * @example const { mask, uncertainty, looks } = await lookAtPhoto(segmenter, modelInput, 'auto')
 */
export async function lookAtPhoto(
  segmenter: Segmenter,
  picture: RawImage,
  quality: Quality,
  aspect?: number,
  secondLook: (firstMask: RawImage) => boolean = needsSecondLook,
): Promise<Looked> {
  if (quality !== 'auto') {
    const views = QUALITY_VIEWS[quality];
    // Every view is rendered before the model's step moves the picture's pixels away.
    const pictures = views.map((view) => renderView(picture, view));
    return { ...fuseViews(views, await segmenter.segment(pictures, aspect)), looks: views.length === 1 ? 1 : 2 };
  }
  // The first look moves the pixels to the model's thread; a copy (cheaper than rendering the
  // mirror that most photos never need) is kept for the second.
  // new Uint8Array copies; a Buffer's slice() would be a view of the pixels that are moved.
  const kept: RawImage = { ...picture, data: new Uint8Array(picture.data) };
  const [first] = await segmenter.segment([picture], aspect);
  if (!secondLook(first)) return { ...fuseViews(['photo'], [first]), looks: 1 };
  const [second] = await segmenter.segment([mirrorImage(kept)], aspect);
  return { ...fuseViews(['photo', 'mirror'], [first, second]), looks: 2 };
}
