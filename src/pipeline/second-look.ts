import type { RawImage } from '../image/raw-image.js';
import { uncertaintyOf } from './views.js';

/** What `quality=auto` reads from the model's first look at a photo to decide on a second. */
export interface FirstLook {
  /** Some pixel of the mask is subject (p ≥ ½). */
  subject: boolean;
  /** Some subject pixel lies on the picture's outermost rows or columns: the frame cuts it. */
  touchesFrame: boolean;
  /** The mask's own hesitation over the subject's area: `fast`'s X-Uncertainty (`uncertaintyOf`). */
  hesitation: number;
}

/**
 * The {@link firstLookDoubt} above which `quality=auto` takes a second look. Calibrated on the
 * fixtures by scripts/calibrate-auto.ts (docs/internals/quality-auto.md has the run and the figures).
 */
export const SECOND_LOOK_THRESHOLD = 0.09;

/** The signals of a one-channel first-look mask. */
export function readFirstLook(mask: RawImage): FirstLook {
  const { data, width, height } = mask;
  let subject = false;
  for (let i = 0; i < data.length && !subject; i++) subject = data[i] >= 128;
  let touchesFrame = false;
  if (subject) {
    const last = (height - 1) * width;
    for (let x = 0; x < width && !touchesFrame; x++) touchesFrame = data[x] >= 128 || data[last + x] >= 128;
    for (let y = 0; y < height && !touchesFrame; y++) touchesFrame = data[y * width] >= 128 || data[y * width + width - 1] >= 128;
  }
  return { subject, touchesFrame, hesitation: uncertaintyOf([data]) };
}

/**
 * How doubtful a first look is, for `quality=auto`'s rule (higher is more doubtful):
 * - no subject at all: 0. A mirror look that found one would be fused with a sure "nothing"
 *   into a faint ghost, and on the fixtures the second look made such crops worse as often as
 *   better;
 * - a subject the frame cuts: its hesitation. A cut subject is where one look most often takes
 *   in something that runs off the picture (a post, a floor) that the mirror look leaves out;
 * - a subject inside the frame: half its hesitation, so it needs twice as much doubt.
 */
export function firstLookDoubt(look: FirstLook): number {
  if (!look.subject) return 0;
  return look.touchesFrame ? look.hesitation : look.hesitation / 2;
}

/**
 * Whether `quality=auto` shows the model the mirror image after this first look: when its
 * {@link firstLookDoubt} is above {@link SECOND_LOOK_THRESHOLD}.
 *
 * @example if (needsSecondLook(firstMask)) masks.push(...(await segmenter.segment([mirror])))
 */
export function needsSecondLook(mask: RawImage): boolean {
  return firstLookDoubt(readFirstLook(mask)) > SECOND_LOOK_THRESHOLD;
}
