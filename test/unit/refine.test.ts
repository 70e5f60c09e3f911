import { describe, expect, it } from 'vitest';
import { blurFusionEstimates, foregroundColour, imageBlurs } from '../../src/pipeline/refine/foreground-blur-fusion.js';
import type { RawImage } from '../../src/image/raw-image.js';
import { boxMean } from '../../src/pipeline/refine/box-mean.js';
import { computeRefinedCutout, DEFAULT_REFINE_SETTINGS, type RefineSettings } from '../../src/pipeline/refine/refine-cutout.js';
import { firmInside } from '../../src/pipeline/refine/firm-inside.js';
import { halve, toGrid } from '../../src/pipeline/refine/grid.js';

/** A width × height RGB image whose pixel (x, y) is `colour(x, y)`. */
function rgb(width: number, height: number, colour: (x: number, y: number) => readonly number[]): RawImage {
  const data = new Uint8Array(width * height * 3);
  for (let y = 0; y < height; y++) for (let x = 0; x < width; x++) data.set(colour(x, y).map(Math.round), 3 * (y * width + x));
  return { data, width, height, channels: 3 };
}

/** A one-channel image whose pixel (x, y) is `value(x, y)` (0..255). */
function grey(width: number, height: number, value: (x: number, y: number) => number): RawImage {
  const data = new Uint8Array(width * height);
  for (let y = 0; y < height; y++) for (let x = 0; x < width; x++) data[y * width + x] = Math.round(value(x, y));
  return { data, width, height, channels: 1 };
}

const clamp01 = (v: number) => Math.min(1, Math.max(0, v));
const only = (settings: Partial<RefineSettings>): RefineSettings => ({ ...DEFAULT_REFINE_SETTINGS, ...settings });

describe('box mean', () => {
  it('equals the brute-force mean of every clipped window', () => {
    let seed = 7;
    const random = () => ((seed = (seed * 16807) % 2147483647) / 2147483647);
    for (const [width, height, radius] of [[1, 1, 0], [5, 3, 1], [17, 9, 4], [8, 20, 30], [33, 31, 2]]) {
      const source = Float32Array.from({ length: width * height }, random);
      const mean = boxMean(source, width, height, radius);
      for (let y = 0; y < height; y++) {
        for (let x = 0; x < width; x++) {
          let sum = 0;
          let count = 0;
          for (let v = Math.max(0, y - radius); v <= Math.min(height - 1, y + radius); v++) {
            for (let u = Math.max(0, x - radius); u <= Math.min(width - 1, x + radius); u++, count++) sum += source[v * width + u];
          }
          expect(mean[y * width + x]).toBeCloseTo(sum / count, 5);
        }
      }
    }
  });
});

describe('grid', () => {
  it('halves by 2×2 means until the largest side fits', () => {
    const image = rgb(4, 2, (x) => [x * 10, 100, 200 + x]);
    expect(halve(image)).toEqual({ data: Uint8Array.of(5, 100, 201, 25, 100, 203), width: 2, height: 1, channels: 3 });
    expect([toGrid(grey(1024, 1024, () => 0), 512).width, toGrid(grey(1300, 600, () => 0), 512).width, toGrid(grey(600, 600, () => 0), 640).width, toGrid(grey(1024, 1024, () => 0), 256).width]).toEqual([512, 325, 600, 256]);
  });
});

describe('foreground colour estimation (blur fusion)', () => {
  // A red subject over a green background; between x = 30 and x = 38 the subject fades out,
  // composited exactly as α·F + (1 − α)·B, as along a soft edge.
  const F = [200, 40, 40];
  const B = [20, 180, 60];
  const size = 64;
  const alphaAt = (x: number) => clamp01((38 - x) / 8);
  const composite = rgb(size, size, (x) => F.map((f, c) => alphaAt(x) * f + (1 - alphaAt(x)) * B[c]));
  /** Largest per-channel error over the pixels with 0.25 ≤ α ≤ 0.9, where a fringe shows. */
  const worstError = (colourAt: (x: number, c: number) => number) => {
    let worst = 0;
    for (let x = 0; x < size; x++) {
      if (alphaAt(x) < 0.25 || alphaAt(x) > 0.9) continue;
      for (let c = 0; c < 3; c++) worst = Math.max(worst, Math.abs(colourAt(x, c) - F[c]));
    }
    return worst;
  };

  it('recovers the subject colour of semi-transparent pixels from the composite', () => {
    const alpha = Float32Array.from({ length: size * size }, (_, i) => alphaAt(i % size));
    const estimates = blurFusionEstimates(imageBlurs(composite, 24), alpha);
    const i = (x: number) => 32 * size + x;
    const estimate = (x: number, c: number) => 255 * foregroundColour(composite.data[3 * i(x) + c] / 255, alpha[i(x)], estimates.foreground[c][i(x)], estimates.background[c][i(x)]);
    expect(worstError(estimate)).toBeLessThanOrEqual(15);
    // The composite itself is far from F there (up to 105 levels): the test could fail.
    expect(worstError((x, c) => composite.data[3 * i(x) + c])).toBeGreaterThan(100);
  });

  it('leaves an opaque pixel as it is and explains a half-covered one', () => {
    expect(foregroundColour(0.3, 1, 0.9, 0.1)).toBeCloseTo(0.3, 12);
    expect(foregroundColour(0.5, 0.5, 1, 0)).toBe(1);
    expect(foregroundColour(0, 0.5, 0, 1)).toBe(0); // −0.25, clipped
  });

  it('does the same through the full refinement, at full size', () => {
    // Guide and mask at the full size (grid = photo), alpha only stretched: colours alone are tested.
    const image = { ...composite, data: composite.data.slice() };
    const mask = grey(size, size, (x) => 255 * alphaAt(x));
    const alpha = computeRefinedCutout({ image, modelInput: composite, mask }, only({ alpha: false, colourRadius: 24 }));
    expect(alpha.data).toEqual(mask.data);
    expect(worstError((x, c) => image.data[3 * (32 * size + x) + c])).toBeLessThanOrEqual(15);
    // Opaque pixels keep the photo's colours; transparent ones are written black for the encoder.
    expect([...image.data.subarray(3 * (32 * size + 5), 3 * (32 * size + 6))]).toEqual(F);
    expect(alpha.data[32 * size + 60]).toBe(0);
    expect([...image.data.subarray(3 * (32 * size + 60), 3 * (32 * size + 61))]).toEqual([0, 0, 0]);
  });
});

describe('alpha refinement (fast guided filter)', () => {
  // The photo has a hard vertical edge at x = 1000 of 2048; the model saw it at half size
  // and gave a mask whose edge is an 8-pixel ramp (16 pixels once stretched).
  const width = 2048;
  const height = 64;
  const edge = 1000;
  const subject = [230, 120, 30];
  const backdrop = [40, 90, 200];
  const photo = rgb(width, height, (x) => (x < edge ? subject : backdrop));
  const modelInput = rgb(width / 2, height / 2, (x) => (2 * x + 1 < edge ? subject : backdrop));
  const mask = grey(width / 2, height / 2, (x) => 255 * clamp01((edge / 2 + 4 - x) / 8));
  const run = (settings: Partial<RefineSettings>) => computeRefinedCutout({ image: { ...photo, data: photo.data.slice() }, modelInput, mask }, only({ colour: false, ...settings }));
  /** The largest step between neighbours along the middle row, and where it is (between x and x + 1). */
  const steepest = (alpha: RawImage) => {
    const row = alpha.data.subarray(32 * width, 33 * width);
    let best = { at: -1, step: 0 };
    for (let x = 0; x + 1 < width; x++) if (Math.abs(row[x] - row[x + 1]) > best.step) best = { at: x, step: Math.abs(row[x] - row[x + 1]) };
    return best;
  };

  it("puts a sharp step into a blurred mask edge, where the photo's edge is", () => {
    const stretched = steepest(run({ alpha: false }));
    const refined = steepest(run({}));
    expect(stretched.step).toBeLessThanOrEqual(20);
    expect(refined.at).toBe(edge - 1);
    expect(refined.step).toBeGreaterThan(4 * stretched.step);
  });

  it('keeps an opaque inside opaque and a transparent outside transparent', () => {
    const refined = run({});
    expect(refined.data[32 * width + 100]).toBe(255);
    expect(refined.data[32 * width + 1900]).toBe(0);
  });
});

describe('firming up the inside', () => {
  // Foreground (0.8) on the left half, background (0.02) on the right.
  const mask = grey(40, 8, (x) => (x < 20 ? 204 : 5));
  const firmed = firmInside(mask, 4);

  it('pushes a confident inside towards 1 away from the outline, and not on it', () => {
    expect(firmed[4 * 40 + 2]).toBeCloseTo(0.8 + 0.6 * 0.2, 5); // w = (0.8 − 0.5) / 0.5 = 0.6
    expect(firmed[4 * 40 + 19]).toBeLessThan(0.85); // next to the outline: little push
    expect(firmed[4 * 40 + 19]).toBeGreaterThanOrEqual(0.8);
  });

  it('leaves the background side as it is', () => {
    for (let x = 20; x < 40; x++) expect(firmed[4 * 40 + x]).toBeCloseTo(5 / 255, 6);
  });
});
