import type { RawImage } from '../image/raw-image.js';

/**
 * How hard the model step looks at a photo: `fast` is one view, the model's single guess;
 * `best` shows the model the photo and its mirror image and fuses the two answers into one
 * mask, which is steadier (docs/quality.md has the figures) for about twice the model's time;
 * `auto` looks once, and a second time, as `best` does, only when the first look is doubtful
 * (`second-look.ts`).
 */
export type Quality = 'fast' | 'best' | 'auto';

export const QUALITIES: readonly Quality[] = ['fast', 'best', 'auto'];

/** One way of showing the model the picture: as it is, or mirrored left to right. */
export type View = 'photo' | 'mirror';

/**
 * The views each quality may run, in the order they go to the model: `auto` runs its second
 * only when the first look is doubtful (`look-at-photo.ts`).
 */
export const QUALITY_VIEWS: Readonly<Record<Quality, readonly View[]>> = Object.freeze({ fast: ['photo'], best: ['photo', 'mirror'], auto: ['photo', 'mirror'] });

/** The model's answer on one photo, its views fused. */
export interface Segmentation {
  /** The fused mask, in the photo's own orientation, 255 = foreground. */
  mask: RawImage;
  /**
   * How doubtful the cut is, from 0 to 1 ({@link uncertaintyOf}); `X-Uncertainty` carries it.
   */
  uncertainty: number;
}

/**
 * The picture as `view` shows it; `photo` is the picture itself (not a copy). The mirror is a
 * new buffer, so the picture's own pixels may still be handed to the model afterwards.
 */
export function renderView(picture: RawImage, view: View): RawImage {
  return view === 'photo' ? picture : mirrorImage(picture);
}

/** The image mirrored left to right, in a new buffer; mirroring it again gives it back. */
export function mirrorImage(image: RawImage): RawImage {
  const { data, width, height, channels } = image;
  const out = new Uint8Array(data.length);
  const row = width * channels;
  for (let y = 0; y < height; y++) {
    const start = y * row;
    for (let x = 0, from = start, to = start + row - channels; x < width; x++, from += channels, to -= channels) {
      for (let c = 0; c < channels; c++) out[to + c] = data[from + c];
    }
  }
  return { data: out, width, height, channels };
}

/**
 * Fuses the model's masks on the views of one picture, each as the model saw it (a mirror
 * view's mask is mirrored back first), into one mask and its uncertainty. One view is its own
 * answer, byte for byte. Several are fused pixel by pixel by the mean of their logits,
 * log(p / (1 − p)), turned back into a probability: where one view is sure and another
 * hesitates, the sure one wins, so the views' disagreements do not leave the subject half
 * transparent as a mean of probabilities does (docs/internals/refinement.md compares the fusions).
 *
 * @example const { mask, uncertainty } = fuseViews(['photo', 'mirror'], [maskOfPhoto, maskOfMirror])
 */
export function fuseViews(views: readonly View[], masks: readonly RawImage[]): Segmentation {
  if (views.length !== masks.length || masks.length === 0) throw new Error(`fuseViews: ${views.length} views but ${masks.length} masks`);
  const upright = masks.map((mask, i) => (views[i] === 'mirror' ? mirrorImage(mask) : mask));
  const uncertainty = uncertaintyOf(upright.map((mask) => mask.data));
  if (upright.length === 1) return { mask: upright[0], uncertainty };
  const { width, height } = upright[0];
  const fused = new Uint8Array(width * height);
  if (upright.length === 2) {
    const [a, b] = upright.map((mask) => mask.data);
    const pairs = fusedPairs();
    for (let i = 0; i < fused.length; i++) fused[i] = pairs[(a[i] << 8) | b[i]];
  } else {
    for (let i = 0; i < fused.length; i++) {
      let sum = 0;
      for (const mask of upright) sum += LOGIT[mask.data[i]];
      fused[i] = toLevel(sum / upright.length);
    }
  }
  return { mask: { data: fused, width, height, channels: 1 }, uncertainty };
}

/**
 * The logit of each 8-bit level, the ends taken a quarter of a level in: an 8-bit 0 or 255 stands
 * for "below half a level from sure", not for certainty, which would outvote any other view.
 */
const LOGIT = Float64Array.from({ length: 256 }, (_, level) => {
  const p = Math.min(Math.max(level, 0.25), 254.75) / 255;
  return Math.log(p / (1 - p));
});

/** A probability's logit back to an 8-bit level, rounded as the model's own mask is. */
function toLevel(logit: number): number {
  return ((255 / (1 + Math.exp(-logit))) + 0.5) | 0;
}

let pairTable: Uint8Array | undefined;

/** Every pair of levels fused, made once: a table look-up per pixel instead of an exp. */
function fusedPairs(): Uint8Array {
  pairTable ??= Uint8Array.from({ length: 256 * 256 }, (_, i) => toLevel((LOGIT[i >> 8] + LOGIT[i & 255]) / 2));
  return pairTable;
}

/**
 * How doubtful a cut is, from the 8-bit masks of its views (in the photo's orientation):
 * - several views: their disagreement over the subject's area, Σ (max − min) over the
 *   pixels, divided by the number of pixels that some view holds to be subject (≥ 128);
 * - one view: the model's own hesitation over the subject's area, Σ (1 − |2p − 1|) over the
 *   pixels (0 where p is 0 or 1, 1 where p is ½), divided by the pixels where p ≥ ½.
 * Both are capped at 1, and 1 when no view finds a subject but the masks are not all 0. A
 * clean cut scores near 0; a subject found in one view and not the other near 1.
 */
export function uncertaintyOf(masks: readonly Uint8Array[]): number {
  const first = masks[0];
  let doubt = 0;
  let subject = 0;
  if (masks.length === 1) {
    for (let i = 0; i < first.length; i++) {
      const p = first[i];
      doubt += 255 - Math.abs(2 * p - 255);
      if (p >= 128) subject++;
    }
    doubt /= 255;
  } else {
    for (let i = 0; i < first.length; i++) {
      let low = first[i];
      let high = low;
      for (let v = 1; v < masks.length; v++) {
        const p = masks[v][i];
        if (p < low) low = p;
        else if (p > high) high = p;
      }
      doubt += high - low;
      if (high >= 128) subject++;
    }
    doubt /= 255;
  }
  if (subject === 0) return doubt > 0 ? 1 : 0;
  return Math.min(1, doubt / subject);
}
