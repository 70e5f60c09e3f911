/**
 * Quality metrics for `npm run eval`: plain functions over 8-bit, one-channel, row-major
 * pixel arrays of equal size (`alpha` = Cutout's prediction, `mask` / `matte` = ground truth).
 * No sharp, no I/O, so they can be checked by hand in test/unit/eval-metrics.test.ts.
 */

/** Grey level that marks GrabCut's unlabelled band along the boundary; such pixels are not scored. */
export const UNLABELLED = 128;
/** A predicted alpha at or above this counts as foreground. */
export const ALPHA_THRESHOLD = 128;
/** β² of the F-measure, as in the salient-object literature (Achanta et al. 2009): precision weighs more. */
export const F_BETA_SQUARED = 0.3;
/** How far (in pixels, Euclidean) a boundary pixel may be from the other map's boundary and still match. */
export const BOUNDARY_TOLERANCE_PX = 3;
/** σ of the Gaussian-derivative filter of the gradient error (Xu et al., Deep Image Matting, 2017). */
export const GRADIENT_SIGMA = 1.4;

/** Scores of a predicted alpha against a binary mask (0 / 255, with {@link UNLABELLED} left out). */
export interface BinaryScores {
  /** |P ∩ G| / |P ∪ G| over labelled pixels, P = alpha ≥ 128, G = mask 255. 1 when both are empty. */
  iou: number;
  precision: number;
  recall: number;
  /** (1 + β²)·P·R / (β²·P + R) with β² = 0.3. */
  fBeta: number;
  /** F1 of boundary pixels matched within {@link BOUNDARY_TOLERANCE_PX}. */
  boundaryF: number;
  /** Mean |alpha − mask| / 255 over labelled pixels (the soft prediction, not thresholded). */
  mae: number;
}

/** Errors of a predicted alpha against a soft matte, both read as 0..1, over every pixel. */
export interface SoftScores {
  /** Mean absolute difference. */
  mae: number;
  /** Mean squared difference. */
  mse: number;
  /** Sum of absolute differences / 1000 (alphamatting.com and Deep Image Matting convention). */
  sad: number;
  /** Gradient error (Deep Image Matting), / 1000; see {@link gradientError}. */
  grad: number;
}

/** Everything {@link BinaryScores} holds, for one image. */
export function scoreBinary(alpha: Uint8Array, mask: Uint8Array, width: number, height: number): BinaryScores {
  checkSizes(alpha, mask, width, height);
  const overlap = overlapScores(alpha, mask);
  return { ...overlap, boundaryF: boundaryFMeasure(alpha, mask, width, height).f, mae: labelledMae(alpha, mask) };
}

/** Everything {@link SoftScores} holds, for one image. */
export function scoreSoft(alpha: Uint8Array, matte: Uint8Array, width: number, height: number): SoftScores {
  checkSizes(alpha, matte, width, height);
  let absolute = 0;
  let squared = 0;
  for (let i = 0; i < alpha.length; i++) {
    const d = (alpha[i] - matte[i]) / 255;
    absolute += Math.abs(d);
    squared += d * d;
  }
  const n = alpha.length;
  return { mae: absolute / n, mse: squared / n, sad: absolute / 1000, grad: gradientError(alpha, matte, width, height) };
}

/**
 * Region overlap after thresholding the prediction at {@link ALPHA_THRESHOLD}; mask pixels equal
 * to {@link UNLABELLED} are skipped, other values count as foreground when above it.
 *
 * @example overlapScores(Uint8Array.of(255, 0), Uint8Array.of(255, 255)).iou // 0.5
 */
export function overlapScores(alpha: Uint8Array, mask: Uint8Array): Pick<BinaryScores, 'iou' | 'precision' | 'recall' | 'fBeta'> {
  let tp = 0;
  let fp = 0;
  let fn = 0;
  for (let i = 0; i < alpha.length; i++) {
    if (mask[i] === UNLABELLED) continue;
    const predicted = alpha[i] >= ALPHA_THRESHOLD;
    const truth = mask[i] > UNLABELLED;
    if (predicted && truth) tp++;
    else if (predicted) fp++;
    else if (truth) fn++;
  }
  const union = tp + fp + fn;
  // Empty sets: nothing predicted where nothing is true counts as perfect, not as 0/0.
  const precision = tp + fp > 0 ? tp / (tp + fp) : fn > 0 ? 0 : 1;
  const recall = tp + fn > 0 ? tp / (tp + fn) : fp > 0 ? 0 : 1;
  const denominator = F_BETA_SQUARED * precision + recall;
  const fBeta = denominator > 0 ? ((1 + F_BETA_SQUARED) * precision * recall) / denominator : 0;
  return { iou: union > 0 ? tp / union : 1, precision, recall, fBeta };
}

/**
 * The semi-transparent area relative to the subject's: pixels with alpha strictly between
 * 10 % and 90 %, divided by the pixels with alpha ≥ {@link ALPHA_THRESHOLD} (0 when there are
 * none). Where a fusion of views leaves a ghost, part of the subject half transparent, it grows.
 *
 * @example semiTransparentShare(Uint8Array.of(255, 255, 128, 0)) // 1 / 3
 */
export function semiTransparentShare(alpha: Uint8Array): number {
  let semi = 0;
  let subject = 0;
  for (const a of alpha) {
    if (a > 25.5 && a < 229.5) semi++;
    if (a >= ALPHA_THRESHOLD) subject++;
  }
  return subject > 0 ? semi / subject : 0;
}

/** Mean |alpha − mask| / 255 over the pixels whose mask is not {@link UNLABELLED}; 0 when there are none. */
export function labelledMae(alpha: Uint8Array, mask: Uint8Array): number {
  let sum = 0;
  let n = 0;
  for (let i = 0; i < alpha.length; i++) {
    if (mask[i] === UNLABELLED) continue;
    sum += Math.abs(alpha[i] - mask[i]);
    n++;
  }
  return n > 0 ? sum / 255 / n : 0;
}

/**
 * Boundary F-measure: precision = share of predicted boundary pixels within `tolerance` px of a
 * true boundary pixel, recall = the converse, f = their F1. A pixel is on a map's boundary when
 * one of its 4 neighbours is on the other side (so the boundary is two pixels thick). In the
 * mask, every {@link UNLABELLED} pixel is a boundary pixel (the band is where the true edge
 * runs), as is a labelled pixel next to the opposite label. No boundary on either side gives 1.
 */
export function boundaryFMeasure(
  alpha: Uint8Array,
  mask: Uint8Array,
  width: number,
  height: number,
  tolerance = BOUNDARY_TOLERANCE_PX,
): { precision: number; recall: number; f: number } {
  checkSizes(alpha, mask, width, height);
  const predictedSide = (i: number) => (alpha[i] >= ALPHA_THRESHOLD ? 1 : 0);
  const trueSide = (i: number) => (mask[i] === UNLABELLED ? -1 : mask[i] > UNLABELLED ? 1 : 0);
  const predicted = boundaryPixels(width, height, predictedSide);
  const truth = boundaryPixels(width, height, (i) => trueSide(i), (i) => trueSide(i) === -1);
  const matchedPredicted = countWithin(predicted, dilate(truth, width, height, tolerance));
  const matchedTrue = countWithin(truth, dilate(predicted, width, height, tolerance));
  const nPredicted = count(predicted);
  const nTrue = count(truth);
  if (nPredicted === 0 && nTrue === 0) return { precision: 1, recall: 1, f: 1 };
  const precision = nPredicted > 0 ? matchedPredicted / nPredicted : 0;
  const recall = nTrue > 0 ? matchedTrue / nTrue : 0;
  return { precision, recall, f: precision + recall > 0 ? (2 * precision * recall) / (precision + recall) : 0 };
}

/**
 * Gradient error of Deep Image Matting (Xu et al. 2017, `compute_gradient_loss`): both alphas
 * as 0..1, filtered with first derivatives of a Gaussian (σ = 1.4, kernel normalised to unit
 * L2 norm, borders replicated), then Σ (|∇alpha| − |∇matte|)² over every pixel, / 1000.
 * The original sums over the trimap's unknown region only; the fixtures have no trimaps.
 * Zero for identical mattes and for any two flat ones, whatever their levels.
 */
export function gradientError(alpha: Uint8Array, matte: Uint8Array, width: number, height: number, sigma = GRADIENT_SIGMA): number {
  checkSizes(alpha, matte, width, height);
  const a = gradientMagnitude(toUnit(alpha), width, height, sigma);
  const b = gradientMagnitude(toUnit(matte), width, height, sigma);
  let sum = 0;
  for (let i = 0; i < a.length; i++) sum += (a[i] - b[i]) ** 2;
  return sum / 1000;
}

/**
 * |∇image| by Gaussian-derivative filtering, as MATLAB `gaussgradient(IM, sigma)`: a
 * (2h+1)² kernel, h = ⌈σ·√(−2·ln(√(2π)·σ·0.01))⌉ (4 for σ = 1.4). The kernel is a Gaussian
 * across times its derivative along, so it is applied as two 1-D passes.
 */
export function gradientMagnitude(image: Float64Array, width: number, height: number, sigma: number): Float64Array {
  const half = Math.ceil(sigma * Math.sqrt(-2 * Math.log(Math.sqrt(2 * Math.PI) * sigma * 0.01)));
  const gauss = (u: number) => Math.exp(-(u * u) / (2 * sigma * sigma)) / (sigma * Math.sqrt(2 * Math.PI));
  const smooth = unitNorm(Float64Array.from({ length: 2 * half + 1 }, (_, k) => gauss(k - half)));
  const derive = unitNorm(Float64Array.from({ length: 2 * half + 1 }, (_, k) => (-(k - half) * gauss(k - half)) / (sigma * sigma)));
  const gx = convolve(convolve(image, width, height, derive, 'x'), width, height, smooth, 'y');
  const gy = convolve(convolve(image, width, height, derive, 'y'), width, height, smooth, 'x');
  const magnitude = new Float64Array(image.length);
  for (let i = 0; i < magnitude.length; i++) magnitude[i] = Math.hypot(gx[i], gy[i]);
  return magnitude;
}

/** Mean of `pick` over `rows`; NaN for none. */
export function meanOf<T>(rows: readonly T[], pick: (row: T) => number): number {
  if (rows.length === 0) return Number.NaN;
  let sum = 0;
  for (const row of rows) sum += pick(row);
  return sum / rows.length;
}

/** True convolution along one axis with edge pixels replicated (MATLAB 'replicate', scipy 'nearest'). */
function convolve(image: Float64Array, width: number, height: number, kernel: Float64Array, axis: 'x' | 'y'): Float64Array {
  const out = new Float64Array(image.length);
  const half = (kernel.length - 1) / 2;
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      let sum = 0;
      for (let k = 0; k < kernel.length; k++) {
        const offset = half - k;
        const sx = axis === 'x' ? clamp(x + offset, width) : x;
        const sy = axis === 'y' ? clamp(y + offset, height) : y;
        sum += kernel[k] * image[sy * width + sx];
      }
      out[y * width + x] = sum;
    }
  }
  return out;
}

/** Marks pixels with a 4-neighbour on another side; `always` marks pixels that are boundary by themselves. */
function boundaryPixels(width: number, height: number, side: (i: number) => number, always?: (i: number) => boolean): Uint8Array {
  const out = new Uint8Array(width * height);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const i = y * width + x;
      if (always?.(i)) {
        out[i] = 1;
        continue;
      }
      const s = side(i);
      const differs = (j: number) => {
        const t = side(j);
        return t !== s && t !== -1;
      };
      if ((x > 0 && differs(i - 1)) || (x + 1 < width && differs(i + 1)) || (y > 0 && differs(i - width)) || (y + 1 < height && differs(i + width))) out[i] = 1;
    }
  }
  return out;
}

/** Every pixel within Euclidean distance `radius` of a set pixel. */
function dilate(set: Uint8Array, width: number, height: number, radius: number): Uint8Array {
  const r = Math.floor(radius);
  const offsets: [number, number][] = [];
  for (let dy = -r; dy <= r; dy++) for (let dx = -r; dx <= r; dx++) if (dx * dx + dy * dy <= radius * radius) offsets.push([dx, dy]);
  const out = new Uint8Array(set.length);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      if (!set[y * width + x]) continue;
      for (const [dx, dy] of offsets) {
        const nx = x + dx;
        const ny = y + dy;
        if (nx >= 0 && nx < width && ny >= 0 && ny < height) out[ny * width + nx] = 1;
      }
    }
  }
  return out;
}

function count(set: Uint8Array): number {
  let n = 0;
  for (let i = 0; i < set.length; i++) n += set[i];
  return n;
}

function countWithin(set: Uint8Array, region: Uint8Array): number {
  let n = 0;
  for (let i = 0; i < set.length; i++) if (set[i] && region[i]) n++;
  return n;
}

function toUnit(values: Uint8Array): Float64Array {
  const out = new Float64Array(values.length);
  for (let i = 0; i < values.length; i++) out[i] = values[i] / 255;
  return out;
}

function unitNorm(kernel: Float64Array): Float64Array {
  const norm = Math.hypot(...kernel);
  return kernel.map((v) => v / norm);
}

function clamp(v: number, size: number): number {
  return v < 0 ? 0 : v >= size ? size - 1 : v;
}

function checkSizes(a: Uint8Array, b: Uint8Array, width: number, height: number): void {
  if (a.length !== width * height || b.length !== width * height) {
    throw new Error(`metric inputs must both be ${width}×${height} = ${width * height} values, got ${a.length} and ${b.length}`);
  }
}
