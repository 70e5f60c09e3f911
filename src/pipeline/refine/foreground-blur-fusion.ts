import type { RawImage } from '../../image/raw-image.js';
import { boxMean } from './box-mean.js';

/**
 * Local estimates of the foreground and background colours behind each grid pixel, planar
 * RGB as 0..1: the inputs of {@link foregroundColour}.
 */
export interface ColourEstimates {
  width: number;
  height: number;
  /** F̂, R, G and B planes. */
  foreground: [Float32Array, Float32Array, Float32Array];
  /** B̂: the (1 − alpha)-weighted mean colour around the pixel. */
  background: [Float32Array, Float32Array, Float32Array];
}

/** The image's own blurred colours, the half of the estimate that needs no alpha. */
export interface ImageBlurs {
  image: RawImage;
  radius: number;
  /** The image as 0..1 planes, R, G, B. */
  planes: [Float32Array, Float32Array, Float32Array];
  /** Box means of the planes at `radius`. */
  blurred: [Float32Array, Float32Array, Float32Array];
}

/** Added to the blurred weights so that a window without foreground (or background) divides by almost 0, not 0. */
const WEIGHT_FLOOR = 1e-5;
const INVERSE_255 = 1 / 255;

/**
 * The part of {@link blurFusionEstimates} that needs only the image (it can run before the
 * alpha exists): its planes and their box means. `blur(I·(1 − α))` is then
 * `blur(I) − blur(I·α)`, one box mean per channel fewer once the alpha is known.
 */
export function imageBlurs(image: RawImage, radius: number): ImageBlurs {
  const { width, height } = image;
  const n = width * height;
  if (image.channels !== 3) throw new Error(`blur fusion needs an RGB image, got ${image.channels} channels`);
  const planes = [0, 1, 2].map((c) => {
    const plane = new Float32Array(n);
    for (let i = 0, j = c; i < n; i++, j += 3) plane[i] = image.data[j] * INVERSE_255;
    return plane;
  }) as ImageBlurs['planes'];
  const blurred = planes.map((plane) => boxMean(plane, width, height, radius)) as ImageBlurs['blurred'];
  return { image, radius, planes, blurred };
}

/**
 * Blur-fusion foreground estimation (Forte & Pitié, "Approximate fast foreground colour
 * estimation", ICIP 2021), one pass: around each pixel the alpha-weighted mean colour
 * `F̂ = blur(I·α) / blur(α)` and the (1 − α)-weighted one `B̂ = blur(I·(1 − α)) / blur(1 − α)`,
 * then `F = F̂ + α·(I − α·F̂ − (1 − α)·B̂)`. Returns F as the foreground estimate and B̂ as
 * the background one, for {@link foregroundColour} to correct each full-size pixel by its
 * own colour and alpha. (The paper's second, narrow pass changed nothing measurable on the
 * eval's green-screen test, so it is left out; docs/quality.md.)
 *
 * @example const estimates = blurFusionEstimates(imageBlurs(guide, 6), alpha)
 */
export function blurFusionEstimates(blurs: ImageBlurs, alpha: Float32Array): ColourEstimates {
  const { image, radius, planes, blurred } = blurs;
  const { width, height } = image;
  const n = width * height;
  if (alpha.length !== n) throw new Error(`blur fusion needs an alpha of ${width}×${height}, got ${alpha.length} values`);
  const product = new Float32Array(n);
  const blurredAlpha = boxMean(alpha, width, height, radius);
  const foreground = [] as unknown as ColourEstimates['foreground'];
  const background = [] as unknown as ColourEstimates['background'];
  for (let c = 0; c < 3; c++) {
    const plane = planes[c];
    for (let i = 0; i < n; i++) product[i] = plane[i] * alpha[i];
    const blurredProduct = boxMean(product, width, height, radius);
    const blurredPlane = blurred[c];
    const f = new Float32Array(n);
    const b = new Float32Array(n);
    for (let i = 0; i < n; i++) {
      const wf = blurredAlpha[i];
      const meanF = blurredProduct[i] / (wf + WEIGHT_FLOOR);
      const meanB = (blurredPlane[i] - blurredProduct[i]) / (1 - wf + WEIGHT_FLOOR);
      b[i] = meanB;
      f[i] = foregroundColour(plane[i], alpha[i], meanF, meanB);
    }
    foreground.push(f);
    background.push(b);
  }
  return { width, height, foreground, background };
}

/**
 * Blur fusion's correction for one channel of one pixel, all values 0..1: the foreground
 * colour `F = F̂ + α·(I − α·F̂ − (1 − α)·B̂)`, clipped to 0..1, so that the pixel's own colour
 * is explained as `α·F + (1 − α)·B̂` as closely as the clip allows.
 *
 * @example foregroundColour(0.5, 0.5, 1, 0) // 1: half-covered white over black
 */
export function foregroundColour(colour: number, alpha: number, foreground: number, background: number): number {
  const f = foreground + alpha * (colour - alpha * foreground - (1 - alpha) * background);
  return f < 0 ? 0 : f > 1 ? 1 : f;
}
