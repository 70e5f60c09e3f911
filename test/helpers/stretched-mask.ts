import type { RawImage } from '../../src/image/raw-image.js';

/**
 * A one-channel mask stretched to `width × height` by sampling it bilinearly at each pixel's
 * centre: an expectation written here, not with the pipeline's own stretch (sharp's linear
 * kernel), which it matches within a few levels where the mask changes fast.
 */
export function stretchedMask(mask: Pick<RawImage, 'data' | 'width' | 'height'>, width: number, height: number): Float64Array {
  const { data, width: mw, height: mh } = mask;
  const out = new Float64Array(width * height);
  for (let y = 0; y < height; y++) {
    const fy = Math.min(mh - 1, Math.max(0, ((y + 0.5) * mh) / height - 0.5));
    const [y0, ay] = [Math.floor(fy), fy - Math.floor(fy)];
    const y1 = Math.min(mh - 1, y0 + 1);
    for (let x = 0; x < width; x++) {
      const fx = Math.min(mw - 1, Math.max(0, ((x + 0.5) * mw) / width - 0.5));
      const [x0, ax] = [Math.floor(fx), fx - Math.floor(fx)];
      const x1 = Math.min(mw - 1, x0 + 1);
      const top = data[y0 * mw + x0] * (1 - ax) + data[y0 * mw + x1] * ax;
      const bottom = data[y1 * mw + x0] * (1 - ax) + data[y1 * mw + x1] * ax;
      out[y * width + x] = top * (1 - ay) + bottom * ay;
    }
  }
  return out;
}

/** How far `alpha` is from `expected`: the mean and largest difference, and the pixels more than 8 levels off. */
export function differenceFrom(alpha: Uint8Array, expected: Float64Array): { mean: number; max: number; over8: number } {
  let [sum, max, over8] = [0, 0, 0];
  for (let i = 0; i < alpha.length; i++) {
    const diff = Math.abs(alpha[i] - expected[i]);
    sum += diff;
    max = Math.max(max, diff);
    if (diff > 8) over8++;
  }
  return { mean: sum / alpha.length, max, over8 };
}
