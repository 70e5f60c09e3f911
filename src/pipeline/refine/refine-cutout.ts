import { blurFusionEstimates, imageBlurs, type ImageBlurs } from './foreground-blur-fusion.js';
import type { VisibleBounds } from '../../image/box.js';
import type { RawImage } from '../../image/raw-image.js';
import { applyAtFullSize } from './full-size.js';
import { firmInside } from './firm-inside.js';
import { toGrid } from './grid.js';
import { guidedFilterCoefficients, guideStatistics, type GuidedFilterCoefficients, type GuideStatistics } from './guided-filter.js';

/**
 * Which parts of the refinement run, and their parameters. Distances are in pixels of the
 * model's mask (1024 across for IS-Net) and are converted to the grid's pixels.
 */
export interface RefineSettings {
  /** The grid's largest side: the model's input and mask are halved until they fit ({@link toGrid}). */
  gridSide: number;
  /** Firm up the inside and guided-filter the alpha by the photo; otherwise the mask is only stretched (bilinear). */
  alpha: boolean;
  /** Replace the colour of semi-transparent pixels by their estimated foreground colour. */
  colour: boolean;
  /** How far inside the outline the mask is fully firmed up ({@link firmInside}). */
  firmRadius: number;
  /** Guided filter window radius and regularisation (colours as 0..1). */
  radius: number;
  epsilon: number;
  /** Blur-fusion window radius (see {@link blurFusionEstimates}). */
  colourRadius: number;
}

/** The settings `npm run eval` chose (docs/quality.md). */
export const DEFAULT_REFINE_SETTINGS: Readonly<RefineSettings> = Object.freeze({
  gridSide: 256,
  alpha: true,
  colour: true,
  firmRadius: 6,
  radius: 4,
  epsilon: 1e-4,
  colourRadius: 24,
});

/** The refinement's first half: what it needs from the photo as the model saw it. */
export interface PreparedRefinement {
  settings: RefineSettings;
  /** The model's input at the grid's size. */
  guide: RawImage;
  /** Grid pixels per mask pixel. */
  gridScale: number;
  /** The guided filter's guide-only half; absent when the alpha is not filtered. */
  statistics?: GuideStatistics;
  /** Blur fusion's image-only half; absent when colours are left as they are. */
  blurs?: ImageBlurs;
}

/**
 * First half of the refinement, which needs only the model's input (the photo stretched to
 * the model's square), so that it can run while the model does: the grid ({@link toGrid}),
 * the guided filter's statistics of it and its blurred colours.
 */
export function prepareRefinement(modelInput: RawImage, settings: RefineSettings): PreparedRefinement {
  if (modelInput.channels !== 3) throw new Error(`refine needs an RGB model input, got ${modelInput.channels} channels`);
  const guide = toGrid(modelInput, settings.gridSide);
  const gridScale = guide.width / modelInput.width;
  const statistics = settings.alpha ? guideStatistics(guide, { radius: gridRadius(settings.radius, gridScale), epsilon: settings.epsilon }) : undefined;
  const blurs = settings.colour ? imageBlurs(guide, gridRadius(settings.colourRadius, gridScale)) : undefined;
  return { settings, guide, gridScale, statistics, blurs };
}

/**
 * Second half: the model's mask firmed up inside ({@link firmInside}), the guided filter's
 * coefficients for it and the colour estimates on the grid, then one pass at full size ({@link applyAtFullSize}). Rewrites
 * `image.data` (the colours of semi-transparent pixels) and returns the full-size alpha: a
 * new one-channel image for an RGB photo, the photo itself, its alpha written, for RGBA.
 * `visible`, when given, learns where the alpha is at least SUBJECT_ALPHA (image/box.ts).
 */
export function finishRefinement(prepared: PreparedRefinement, image: RawImage, modelMask: RawImage, visible?: VisibleBounds): RawImage {
  const { settings, guide, gridScale, statistics, blurs } = prepared;
  const mask = toGrid(modelMask, settings.gridSide);
  if (mask.width !== guide.width || mask.height !== guide.height || mask.channels !== 1) {
    throw new Error(`refine needs a one-channel mask the size of the model input, got ${modelMask.width}×${modelMask.height}×${modelMask.channels}`);
  }
  const n = mask.width * mask.height;
  const coefficients: GuidedFilterCoefficients = statistics
    ? guidedFilterCoefficients(statistics, firmInside(mask, gridRadius(settings.firmRadius, gridScale)))
    : { width: mask.width, height: mask.height, ar: new Float32Array(n), ag: new Float32Array(n), ab: new Float32Array(n), b: Float32Array.from(mask.data, (v) => v / 255) };

  // The refined alpha on the grid: for the colour estimates, and to find the cells that are
  // wholly transparent or wholly opaque.
  const gridAlpha = new Float32Array(n);
  const gridAlpha8 = new Uint8Array(n);
  const { ar, ag, ab, b } = coefficients;
  for (let i = 0, j = 0; i < n; i++, j += 3) {
    const a = (ar[i] * guide.data[j] + ag[i] * guide.data[j + 1] + ab[i] * guide.data[j + 2]) / 255 + b[i];
    const clamped = a < 0 ? 0 : a > 1 ? 1 : a;
    gridAlpha[i] = clamped;
    gridAlpha8[i] = (clamped * 255 + 0.5) | 0; // rounds a non-negative value, cheaper than Math.round
  }
  const colour = blurs ? blurFusionEstimates(blurs, gridAlpha) : undefined;
  return applyAtFullSize(image, { coefficients, alpha: gridAlpha8, colour }, visible);
}

/**
 * The whole refinement in one call ({@link prepareRefinement} then {@link finishRefinement}):
 * plain typed-array code; the finish thread (`finish-worker.ts`) runs the two halves.
 *
 * @example const alpha = computeRefinedCutout({ image, modelInput, mask }, DEFAULT_REFINE_SETTINGS)
 */
export function computeRefinedCutout(input: { image: RawImage; modelInput: RawImage; mask: RawImage }, settings: RefineSettings): RawImage {
  return finishRefinement(prepareRefinement(input.modelInput, settings), input.image, input.mask);
}

/** A distance in mask pixels as whole grid pixels: at least 1, except 0 which stays 0. */
function gridRadius(maskPixels: number, gridScale: number): number {
  return maskPixels > 0 ? Math.max(1, Math.round(maskPixels * gridScale)) : 0;
}
