import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import sharp from 'sharp';
import { afterAll, describe, expect, it } from 'vitest';
import { FinishThread } from '../src/pipeline/finish-thread.js';
import { removeBackground } from '../src/pipeline/remove-background.js';
import type { Segmenter } from '../src/model/segmenter.js';
import type { RegionOfInterest } from '../src/pipeline/answer-spec.js';
import type { Quality } from '../src/pipeline/views.js';
import { readGreyMask } from '../scripts/eval/dataset.js';
import { groundTruthRoi } from '../scripts/eval/roi.js';
import { meanOf, scoreBinary, type BinaryScores } from '../scripts/eval/metrics.js';
import { sharedFp32Segmenter, sharedSegmenter } from './helpers/app.js';
import { makeSubjectPhoto } from './helpers/images.js';

/**
 * The cut's quality, guarded: the real model and the default pipeline (refined) on photos
 * with ground truth, scored as `npm run eval` scores them (IoU and 3-px boundary F, alpha
 * thresholded at 128). The thresholds sit just under today's scores, so a change that makes
 * the cut worse fails here, not in a user's hands (docs/quality.md has the full eval). The
 * int8 model, which most servers run, is guarded on all eight photos; float32, on three of
 * them, with floors of its own.
 */

const GRABCUT = fileURLToPath(new URL('../../shared/fixtures/labelled/grabcut', import.meta.url));
/** Eight pairs whose mask marks the whole subject (none of the manifest's ambiguous ones): people, animals, products, objects. */
const SUBSET = ['106024', '153093', '181079', '208001', '326038', '37073', 'banana1', 'ceramic'];
/** Just under what quality=best scored on SUBSET with the int8 test model (see the commit that set them). */
const BEST_FLOORS = { iou: 0.962, boundaryF: 0.932 };
const hasGrabCut = existsSync(join(GRABCUT, 'images'));
if (!hasGrabCut) {
  // CI always has the fixtures: there the guard must not vanish unseen (.ci/run checks first).
  if (process.env.CI) throw new Error(`${GRABCUT} is missing; under CI the GrabCut quality guard must run`);
  console.error(`[cutout tests] GrabCut quality guard SKIPPED: ${GRABCUT} is not beside this checkout (the fixtures live outside the repository)`);
}

const finisher = new FinishThread();
afterAll(() => finisher.close());

/**
 * The refined answer's alpha for `bytes`, scored against `truth` (0/255, 128 = unlabelled band):
 * the int8 model unless another segmenter is given, one look unless `quality` says.
 */
async function scoreCut(
  bytes: Uint8Array,
  truth: { data: Uint8Array; width: number; height: number },
  options: { roi?: RegionOfInterest; segmenter?: Segmenter; quality?: Quality } = {},
): Promise<BinaryScores> {
  const segmenter = options.segmenter ?? (await sharedSegmenter());
  const { bytes: png } = await removeBackground(bytes, { segmenter, finisher, maxPixels: 1e9, roi: options.roi, quality: options.quality });
  const { data, info } = await sharp(png).extractChannel(3).raw().toBuffer({ resolveWithObject: true });
  expect([info.width, info.height]).toEqual([truth.width, truth.height]);
  return scoreBinary(data, truth.data, truth.width, truth.height);
}

/** Mean IoU and boundary F of the refined answers on `names`, with a per-photo table for the failure message. */
async function scoreSubset(names: string[], segmenter: Segmenter, quality: Quality = 'fast'): Promise<{ iou: number; boundaryF: number; table: string }> {
  const scores: (BinaryScores & { name: string })[] = [];
  for (const name of names) {
    const image = [`${name}.jpg`, `${name}.png`].map((file) => join(GRABCUT, 'images', file)).find(existsSync)!;
    scores.push({ name, ...(await scoreCut(await readFile(image), await readGreyMask(join(GRABCUT, 'masks', `${name}.png`)), { segmenter, quality })) });
  }
  const table = scores.map((s) => `${s.name} IoU ${s.iou.toFixed(4)} BF ${s.boundaryF.toFixed(4)}`).join('\n');
  return { iou: meanOf(scores, (s) => s.iou), boundaryF: meanOf(scores, (s) => s.boundaryF), table: `${quality}:\n${table}` };
}

describe('cut quality on GrabCut photos', () => {
  it.skipIf(!hasGrabCut)('int8 keeps mean IoU and 3-px boundary F on eight labelled photos, with one look', { timeout: 300_000 }, async () => {
    const { iou, boundaryF, table } = await scoreSubset(SUBSET, await sharedSegmenter());
    expect(iou, table).toBeGreaterThan(0.955);
    expect(boundaryF, table).toBeGreaterThan(0.93);
  });

  // The two hardest of the eight and a product shot: where a float32-only regression (its
  // assembly, a change of the graph rewrite both forms share) would show first.
  it.skipIf(!hasGrabCut)('float32 keeps mean IoU and 3-px boundary F on three of them', { timeout: 300_000 }, async () => {
    const { iou, boundaryF, table } = await scoreSubset(['153093', '37073', 'ceramic'], await sharedFp32Segmenter());
    expect(iou, table).toBeGreaterThan(0.926);
    expect(boundaryF, table).toBeGreaterThan(0.888);
  });

  it.skipIf(!hasGrabCut)('keeps its own, higher floors with the views fused (quality=best, the default)', { timeout: 600_000 }, async () => {
    const { iou, boundaryF, table } = await scoreSubset(SUBSET, await sharedSegmenter(), 'best');
    expect(iou, table).toBeGreaterThan(BEST_FLOORS.iou);
    expect(boundaryF, table).toBeGreaterThan(BEST_FLOORS.boundaryF);
  });
});

describe('a region of interest on a GrabCut photo', () => {
  it.skipIf(!hasGrabCut)('scores at least the whole photo\'s IoU when it is the subject\'s box and a margin', { timeout: 120_000 }, async () => {
    // person1: a person who fills about a quarter of the frame (manifest fg_fraction 0.29).
    const bytes = await readFile(join(GRABCUT, 'images', 'person1.jpg'));
    const truth = await readGreyMask(join(GRABCUT, 'masks', 'person1.png'));
    const whole = await scoreCut(bytes, truth);
    const region = await scoreCut(bytes, truth, { roi: groundTruthRoi(truth, { value: 10, unit: '%' }) });
    expect(region.iou, `roi ${region.iou.toFixed(4)}, whole photo ${whole.iou.toFixed(4)}`).toBeGreaterThanOrEqual(whole.iou);
  });
});

describe('cut quality on a generated photo', () => {
  it('cuts the ball out along its outline, and not its shadow', { timeout: 120_000 }, async () => {
    const [width, height] = [800, 600];
    const photo = await (await makeSubjectPhoto(width, height)).jpeg({ quality: 92 }).toBuffer();
    // The ball of makeSubjectPhoto, drawn as the truth: a circle of radius 0.3 × the short side.
    const radius = Math.round(Math.min(width, height) * 0.3);
    const truth = new Uint8Array(width * height);
    for (let y = 0; y < height; y++) for (let x = 0; x < width; x++) truth[y * width + x] = Math.hypot(x + 0.5 - width / 2, y + 0.5 - height / 2) <= radius ? 255 : 0;
    const { iou, boundaryF } = await scoreCut(photo, { data: truth, width, height });
    expect(iou).toBeGreaterThan(0.995);
    expect(boundaryF).toBeGreaterThan(0.99);
  });
});
