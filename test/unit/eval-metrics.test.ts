import { describe, expect, it } from 'vitest';
import { boundaryFMeasure, gradientError, gradientMagnitude, labelledMae, overlapScores, scoreBinary, scoreSoft } from '../../scripts/eval/metrics.js';

/** A width × height map, `inside(x, y)` ? `on` : `off`. */
function paint(width: number, height: number, inside: (x: number, y: number) => boolean, on = 255, off = 0): Uint8Array {
  const data = new Uint8Array(width * height);
  for (let y = 0; y < height; y++) for (let x = 0; x < width; x++) data[y * width + x] = inside(x, y) ? on : off;
  return data;
}

const rect = (x0: number, y0: number, x1: number, y1: number) => (x: number, y: number) => x >= x0 && x <= x1 && y >= y0 && y <= y1;

describe('overlap of binary maps', () => {
  // Two 5×5 squares on a 10×10 image, offset by (2, 2): 9 pixels shared, 16 only in each.
  const predicted = paint(10, 10, rect(0, 0, 4, 4));
  const truth = paint(10, 10, rect(2, 2, 6, 6));

  it('gives IoU 9/41 and, with P = R = 9/25, Fβ = 9/25 for two offset squares', () => {
    const s = overlapScores(predicted, truth);
    expect(s.iou).toBeCloseTo(9 / 41, 12);
    expect(s.precision).toBeCloseTo(9 / 25, 12);
    expect(s.recall).toBeCloseTo(9 / 25, 12);
    expect(s.fBeta).toBeCloseTo(9 / 25, 12);
    expect(labelledMae(predicted, truth)).toBeCloseTo(32 / 100, 12);
  });

  it('leaves the 128 band out: the 16 false positives marked unlabelled no longer count', () => {
    const banded = truth.slice();
    for (let i = 0; i < banded.length; i++) if (predicted[i] === 255 && truth[i] === 0) banded[i] = 128;
    const s = overlapScores(predicted, banded);
    expect(s.iou).toBeCloseTo(9 / 25, 12);
    expect(s.precision).toBe(1);
    expect(s.recall).toBeCloseTo(9 / 25, 12);
    // (1 + 0.3)·1·0.36 / (0.3·1 + 0.36)
    expect(s.fBeta).toBeCloseTo(0.468 / 0.66, 12);
    // 84 labelled pixels, 16 of them (the ground truth's own square minus the overlap) wrong by 1.
    expect(labelledMae(predicted, banded)).toBeCloseTo(16 / 84, 12);
  });

  it('thresholds the prediction at 128 and reads the mask above 128 as foreground', () => {
    expect(overlapScores(Uint8Array.of(127, 128), Uint8Array.of(255, 255))).toMatchObject({ iou: 0.5, precision: 1, recall: 0.5 });
    expect(overlapScores(Uint8Array.of(127, 128), Uint8Array.of(0, 255)).iou).toBe(1);
  });

  it('scores two empty maps as a perfect match and a missed subject as zero', () => {
    expect(overlapScores(new Uint8Array(4), new Uint8Array(4))).toEqual({ iou: 1, precision: 1, recall: 1, fBeta: 1 });
    expect(overlapScores(new Uint8Array(4), Uint8Array.of(0, 255, 0, 0))).toEqual({ iou: 0, precision: 0, recall: 0, fBeta: 0 });
  });

  it('measures MAE on the soft prediction, not the thresholded one', () => {
    expect(labelledMae(Uint8Array.of(51, 204, 0), Uint8Array.of(0, 255, 128))).toBeCloseTo(0.2, 12);
  });
});

describe('boundary F-measure (3 px tolerance)', () => {
  // 20×20, left half foreground: the true boundary is columns 9 and 10.
  const truth = paint(20, 20, (x) => x <= 9);
  const leftOf = (lastColumn: number) => paint(20, 20, (x) => x <= lastColumn);

  it('is 1 for the same edge and for an edge 3 px away', () => {
    expect(boundaryFMeasure(truth, truth, 20, 20).f).toBe(1);
    expect(boundaryFMeasure(leftOf(6), truth, 20, 20).f).toBe(1); // columns 6, 7 against 9, 10
  });

  it('is 0.5 when one of each two boundary columns is within reach, 0 when none is', () => {
    // Predicted boundary columns 5 and 6: only 6 is within 3 px of 9, and only 9 within 3 px of 6.
    expect(boundaryFMeasure(leftOf(5), truth, 20, 20)).toEqual({ precision: 0.5, recall: 0.5, f: 0.5 });
    expect(boundaryFMeasure(leftOf(4), truth, 20, 20).f).toBe(0);
  });

  it('takes the unlabelled band as where the true edge runs', () => {
    const banded = paint(20, 20, (x) => x <= 8);
    for (let y = 0; y < 20; y++) banded[y * 20 + 9] = banded[y * 20 + 10] = 128;
    expect(boundaryFMeasure(truth, banded, 20, 20).f).toBe(1);
    expect(boundaryFMeasure(leftOf(3), banded, 20, 20).f).toBe(0);
  });

  it('is 1 when neither map has an edge and 0 when only one has', () => {
    expect(boundaryFMeasure(new Uint8Array(16), new Uint8Array(16), 4, 4).f).toBe(1);
    expect(boundaryFMeasure(new Uint8Array(400), truth, 20, 20).f).toBe(0);
  });

  it('is part of scoreBinary', () => {
    expect(scoreBinary(leftOf(5), truth, 20, 20).boundaryF).toBe(0.5);
  });
});

describe('soft matte errors', () => {
  it('gives SAD 2.2, MAE 0.22 and MSE 0.204 for 2000 pixels off by 1 and 1000 off by 0.2', () => {
    const matte = paint(100, 100, (x, y) => y < 20); // 2000 pixels at 255
    for (let i = 2000; i < 3000; i++) matte[i] = 51; // 1000 pixels at 0.2
    const s = scoreSoft(new Uint8Array(10_000), matte, 100, 100);
    expect(s.sad).toBeCloseTo(2.2, 12);
    expect(s.mae).toBeCloseTo(0.22, 12);
    expect(s.mse).toBeCloseTo(0.204, 12);
    expect(s.grad).toBeGreaterThan(0);
  });

  it('rejects maps of the wrong size', () => {
    expect(() => scoreSoft(new Uint8Array(4), new Uint8Array(5), 2, 2)).toThrow(/2×2/);
  });
});

describe('gradient error (Gaussian derivative, σ = 1.4)', () => {
  const step = paint(24, 8, (x) => x >= 10);

  it('is zero for identical mattes, and for two flat ones whatever their levels', () => {
    expect(gradientError(step, step, 24, 8)).toBe(0);
    expect(gradientError(new Uint8Array(192), new Uint8Array(192).fill(255), 24, 8)).toBeCloseTo(0, 12);
  });

  it('is positive for an edge against no edge, the same either way round', () => {
    const flat = new Uint8Array(192);
    const e = gradientError(step, flat, 24, 8);
    expect(e).toBeGreaterThan(0);
    expect(gradientError(flat, step, 24, 8)).toBeCloseTo(e, 15);
  });

  it('is positive for a soft edge against a hard one', () => {
    const soft = paint(24, 8, (x) => x >= 10);
    for (let y = 0; y < 8; y++) [9, 10].forEach((x, k) => (soft[y * 24 + x] = [85, 170][k]));
    expect(gradientError(soft, step, 24, 8)).toBeGreaterThan(0);
  });

  it('sees a step only within the 9-tap kernel (half-width 4), symmetrically', () => {
    const unit = Float64Array.from(step, (v) => v / 255);
    const magnitude = gradientMagnitude(unit, 24, 8, 1.4);
    const row = Array.from(magnitude.subarray(4 * 24, 5 * 24));
    // Step between columns 9 and 10: columns 6..13 see both sides.
    row.forEach((m, x) => (x >= 6 && x <= 13 ? expect(m).toBeGreaterThan(0) : expect(m).toBeCloseTo(0, 12)));
    for (let d = 0; d < 4; d++) expect(row[9 - d]).toBeCloseTo(row[10 + d], 12);
    expect(row[9]).toBeGreaterThan(row[8]);
  });
});
