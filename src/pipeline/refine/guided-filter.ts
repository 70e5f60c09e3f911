import type { RawImage } from '../../image/raw-image.js';
import { boxMean } from './box-mean.js';

/**
 * The guided filter's local linear model, smoothed: within every window the alpha is
 * `ar·R + ag·G + ab·B + b` of the guide's colours (all as 0..1), planar, one value per grid
 * pixel. Applying them to a finer picture of the same scene (the fast guided filter of
 * He & Sun, 2015) gives an alpha whose edges follow that picture's edges.
 */
export interface GuidedFilterCoefficients {
  width: number;
  height: number;
  ar: Float32Array;
  ag: Float32Array;
  ab: Float32Array;
  b: Float32Array;
}

export interface GuidedFilterOptions {
  /** Window radius in grid pixels. */
  radius: number;
  /** Regularisation (guide and alpha as 0..1): larger smooths more, smaller follows weaker edges. */
  epsilon: number;
}

/**
 * What the colour guided filter needs from the guide alone, per window: the mean colour and
 * the inverse of the colour covariance plus εU (the six entries of a symmetric 3×3). Half
 * the filter's work; it can be done before the mask exists, while the model runs.
 */
export interface GuideStatistics {
  guide: RawImage;
  radius: number;
  /** The guide as 0..1 planes, R, G, B. */
  planes: [Float32Array, Float32Array, Float32Array];
  means: [Float32Array, Float32Array, Float32Array];
  /** (Σ + εU)⁻¹ entries rr, rg, rb, gg, gb, bb. */
  inverse: [Float32Array, Float32Array, Float32Array, Float32Array, Float32Array, Float32Array];
}

/**
 * The guide's half of the colour guided filter (He, Sun & Tang, 2010/2013).
 *
 * @example const statistics = guideStatistics(guide, { radius: 2, epsilon: 1e-4 })
 */
export function guideStatistics(guide: RawImage, options: GuidedFilterOptions): GuideStatistics {
  const { width, height } = guide;
  if (guide.channels !== 3) throw new Error(`the guided filter needs an RGB guide, got ${guide.channels} channels`);
  const n = width * height;
  const { radius, epsilon } = options;
  const product = new Float32Array(n);
  const box = (source: Float32Array) => boxMean(source, width, height, radius);

  const planes = [0, 1, 2].map((c) => {
    const plane = new Float32Array(n);
    for (let i = 0, j = c; i < n; i++, j += 3) plane[i] = guide.data[j] * INVERSE_255;
    return plane;
  }) as GuideStatistics['planes'];
  const means = planes.map(box) as GuideStatistics['means'];
  const meanOfProduct = (x: Float32Array, y: Float32Array) => {
    for (let i = 0; i < n; i++) product[i] = x[i] * y[i];
    return box(product);
  };
  const [r, g, b] = planes;
  // Σ + εU, then written over with its inverse (by cofactors), entry by entry.
  const rr = meanOfProduct(r, r);
  const rg = meanOfProduct(r, g);
  const rb = meanOfProduct(r, b);
  const gg = meanOfProduct(g, g);
  const gb = meanOfProduct(g, b);
  const bb = meanOfProduct(b, b);
  const [mr, mg, mb] = means;
  for (let i = 0; i < n; i++) {
    const vrr = rr[i] - mr[i] * mr[i] + epsilon;
    const vrg = rg[i] - mr[i] * mg[i];
    const vrb = rb[i] - mr[i] * mb[i];
    const vgg = gg[i] - mg[i] * mg[i] + epsilon;
    const vgb = gb[i] - mg[i] * mb[i];
    const vbb = bb[i] - mb[i] * mb[i] + epsilon;
    const irr = vgg * vbb - vgb * vgb;
    const irg = vgb * vrb - vrg * vbb;
    const irb = vrg * vgb - vgg * vrb;
    const inverseDet = 1 / (vrr * irr + vrg * irg + vrb * irb);
    rr[i] = irr * inverseDet;
    rg[i] = irg * inverseDet;
    rb[i] = irb * inverseDet;
    gg[i] = (vrr * vbb - vrb * vrb) * inverseDet;
    gb[i] = (vrb * vrg - vrr * vgb) * inverseDet;
    bb[i] = (vrr * vgg - vrg * vrg) * inverseDet;
  }
  return { guide, radius, planes, means, inverse: [rr, rg, rb, gg, gb, bb] };
}

/**
 * The colour guided filter of an alpha (0..1, the guide's size) by the guide whose
 * statistics are given: per window, the least-squares fit `alpha ≈ a·I + b` with `ε` ridge
 * regularisation, then the fits of the windows covering each pixel averaged. Returns the
 * averaged `a` and `b` rather than the filtered alpha, so that they can be applied to the
 * picture at a finer resolution (`full-size.ts`).
 *
 * @example const c = guidedFilterCoefficients(guideStatistics(guide, options), alpha)
 */
export function guidedFilterCoefficients(statistics: GuideStatistics, alpha: Float32Array): GuidedFilterCoefficients {
  const { guide, radius, planes, means, inverse } = statistics;
  const { width, height } = guide;
  const n = width * height;
  if (alpha.length !== n) throw new Error(`the guided filter needs an alpha of ${width}×${height}, got ${alpha.length} values`);
  const product = new Float32Array(n);
  const box = (source: Float32Array, out = new Float32Array(n)) => boxMean(source, width, height, radius, out);

  const meanP = box(alpha);
  const [r, g, b] = planes;
  const covariance = (plane: Float32Array) => {
    for (let i = 0; i < n; i++) product[i] = plane[i] * alpha[i];
    return box(product);
  };
  const ar = covariance(r);
  const ag = covariance(g);
  const ab = covariance(b);
  const [mr, mg, mb] = means;
  const [irr, irg, irb, igg, igb, ibb] = inverse;
  // a = (Σ + εU)⁻¹ cov(I, p), b = mean(p) − a·mean(I); written over the mean products.
  for (let i = 0; i < n; i++) {
    const mp = meanP[i];
    const cr = ar[i] - mr[i] * mp;
    const cg = ag[i] - mg[i] * mp;
    const cb = ab[i] - mb[i] * mp;
    const xr = irr[i] * cr + irg[i] * cg + irb[i] * cb;
    const xg = irg[i] * cr + igg[i] * cg + igb[i] * cb;
    const xb = irb[i] * cr + igb[i] * cg + ibb[i] * cb;
    ar[i] = xr;
    ag[i] = xg;
    ab[i] = xb;
    meanP[i] = mp - xr * mr[i] - xg * mg[i] - xb * mb[i];
  }
  return { width, height, ar: box(ar, product), ag: box(ag), ab: box(ab), b: box(meanP) };
}

const INVERSE_255 = 1 / 255;
