import sharp from 'sharp';
import { afterEach, describe, expect, it } from 'vitest';
import type { RawImage } from '../src/image/raw-image.js';
import { FinishPool } from '../src/pipeline/finish-pool.js';
import { DEFAULT_REFINE_SETTINGS } from '../src/pipeline/refine/refine-cutout.js';
import { CRASH_PIXELS } from './helpers/crashing-finish-worker.js';

const MAX_PIXELS = 50e6;
const CRASHING = new URL('./helpers/crashing-finish-worker.ts', import.meta.url);
const REFINED = { refine: DEFAULT_REFINE_SETTINGS };

/** A photo of its own size (a disc on a backdrop) as PNG bytes, the model's 64² view of it and a mask. */
async function image(width: number, height: number): Promise<{ photo: Buffer; modelInput: RawImage; mask: RawImage }> {
  const inside = (x: number, y: number, w: number, h: number) => Math.hypot(x / w - 0.5, y / h - 0.5) < 0.3;
  const pixels = new Uint8Array(width * height * 3);
  for (let y = 0; y < height; y++) for (let x = 0; x < width; x++) pixels.set(inside(x, y, width, height) ? [220, 110, 40] : [60, 170, 90], 3 * (y * width + x));
  const photo = await sharp(pixels, { raw: { width, height, channels: 3 } }).png().toBuffer();
  const modelInput = { data: new Uint8Array(64 * 64 * 3), width: 64, height: 64, channels: 3 as const };
  const mask = { data: new Uint8Array(64 * 64), width: 64, height: 64, channels: 1 as const };
  for (let y = 0; y < 64; y++) {
    for (let x = 0; x < 64; x++) {
      modelInput.data.set(inside(x, y, 64, 64) ? [220, 110, 40] : [60, 170, 90], 3 * (y * 64 + x));
      mask.data[y * 64 + x] = inside(x, y, 64, 64) ? 255 : 0;
    }
  }
  return { photo, modelInput, mask };
}

/** A copy of the mask: `finish` moves its pixels to the thread. */
const copy = (mask: RawImage): RawImage => ({ ...mask, data: mask.data.slice() });

/** The images' sizes: no two alike, so an answer made from another image's photo shows. */
const SIZES = [
  [300, 200],
  [160, 240],
  [410, 90],
  [200, 200],
  [123, 321],
  [250, 130],
] as const;

describe('the finish pool', () => {
  let pool: FinishPool | undefined;
  afterEach(() => pool?.close());

  it('gives each image to the least busy thread, the first on a tie, and finishes it there', async () => {
    pool = new FinishPool({ threads: 3 });
    const images = await Promise.all(SIZES.map(([width, height]) => image(width, height)));
    expect(pool.held).toEqual([0, 0, 0]);
    const finishings = images.map(({ photo }) => pool!.begin(photo, { maxPixels: MAX_PIXELS, spec: REFINED }));
    expect(pool.held).toEqual([2, 2, 2]);
    finishings.forEach((finishing, i) => finishing.prepare(images[i].modelInput));
    // Finished in the reverse order, each answer from its own photo: an image's messages went
    // to the thread that began it (the threads number their images alike, from 0).
    const answers = await Promise.all(finishings.map((finishing, i) => finishing.finish(copy(images[i].mask))).reverse());
    expect(answers.reverse().map(({ width, height }) => [width, height])).toEqual(SIZES.map((size) => [...size]));
    expect(pool.held).toEqual([0, 0, 0]);

    // One image at a time keeps to the first thread; a cancelled one is let go.
    const one = pool.begin(images[0].photo, { maxPixels: MAX_PIXELS, spec: {} });
    expect(pool.held).toEqual([1, 0, 0]);
    one.cancel();
    expect(pool.held).toEqual([0, 0, 0]);
    await pool.begin(images[1].photo, { maxPixels: MAX_PIXELS, spec: {} }).finish(copy(images[1].mask));
    expect(pool.held).toEqual([0, 0, 0]);
  });

  it('fails only the images of a thread that crashed, and starts that thread again for the next', async () => {
    pool = new FinishPool({ threads: 2, module: CRASHING });
    const images = await Promise.all(SIZES.slice(0, 5).map(([width, height]) => image(width, height)));
    const finishings = images.slice(0, 4).map(({ photo }) => pool!.begin(photo, { maxPixels: MAX_PIXELS, spec: REFINED }));
    expect(pool.held).toEqual([2, 2]);
    // On a tie, the first thread: the one that held images 0 and 2, which it takes down.
    const crashing = pool.begin(images[4].photo, { maxPixels: CRASH_PIXELS, spec: REFINED });
    expect(pool.held).toEqual([3, 2]);
    finishings.forEach((finishing, i) => finishing.prepare(images[i].modelInput));
    const outcomes = await Promise.allSettled([...finishings, crashing].map((finishing, i) => finishing.finish(copy(images[i].mask))));
    expect(outcomes.map((outcome) => outcome.status)).toEqual(['rejected', 'fulfilled', 'rejected', 'fulfilled', 'rejected']);
    for (const outcome of outcomes) if (outcome.status === 'rejected') expect(String(outcome.reason)).toMatch(/finish thread (exited with code 7|stopped)/);
    const answered = outcomes.flatMap((outcome) => (outcome.status === 'fulfilled' ? [[outcome.value.width, outcome.value.height]] : []));
    expect(answered).toEqual([[...SIZES[1]], [...SIZES[3]]]);
    expect(pool.held).toEqual([0, 0]);

    const again = pool.begin(images[0].photo, { maxPixels: MAX_PIXELS, spec: {} });
    expect(pool.held).toEqual([1, 0]);
    expect(await again.finish(copy(images[0].mask))).toMatchObject({ width: SIZES[0][0], height: SIZES[0][1] });
  });

  it('waits for every thread\'s images before it closes', async () => {
    pool = new FinishPool({ threads: 2 });
    const images = await Promise.all(SIZES.slice(0, 2).map(([width, height]) => image(width, height)));
    const answers = images.map(({ photo, mask }) => pool!.begin(photo, { maxPixels: MAX_PIXELS, spec: {} }).finish(copy(mask)));
    expect(pool.held).toEqual([1, 1]);
    await pool.close();
    const finished = await Promise.all(answers);
    expect(finished.map(({ width }) => width)).toEqual([SIZES[0][0], SIZES[1][0]]);
    expect(() => pool!.begin(images[0].photo, { maxPixels: MAX_PIXELS, spec: {} })).toThrow(/closed/);
  });
});
