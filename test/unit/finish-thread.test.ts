import sharp from 'sharp';
import { afterAll, describe, expect, it } from 'vitest';
import { CutoutError } from '../../src/errors.js';
import { decodeImage } from '../../src/pipeline/decode.js';
import { encodePng } from '../../src/pipeline/encode.js';
import type { RawImage } from '../../src/image/raw-image.js';
import { FinishThread } from '../../src/pipeline/finish-thread.js';
import { computeRefinedCutout, DEFAULT_REFINE_SETTINGS } from '../../src/pipeline/refine/refine-cutout.js';
import { scaleMask } from '../../src/pipeline/stretch-alpha.js';
import { differenceFrom, stretchedMask } from '../helpers/stretched-mask.js';

/** A 600×400 photo of a soft-edged disc, the model's 256² view of it, and a blurred mask. */
function scene(): { image: RawImage; modelInput: RawImage; mask: RawImage } {
  const disc = (x: number, y: number, w: number, h: number) => Math.hypot(x / w - 0.5, y / h - 0.5) < 0.3;
  const image = { data: new Uint8Array(600 * 400 * 3), width: 600, height: 400, channels: 3 as const };
  for (let y = 0; y < 400; y++) for (let x = 0; x < 600; x++) image.data.set(disc(x, y, 600, 400) ? [220, 110, 40] : [60, 170, 90], 3 * (y * 600 + x));
  const modelInput = { data: new Uint8Array(256 * 256 * 3), width: 256, height: 256, channels: 3 as const };
  const mask = { data: new Uint8Array(256 * 256), width: 256, height: 256, channels: 1 as const };
  for (let y = 0; y < 256; y++) {
    for (let x = 0; x < 256; x++) {
      modelInput.data.set(disc(x, y, 256, 256) ? [220, 110, 40] : [60, 170, 90], 3 * (y * 256 + x));
      const r = Math.hypot(x / 256 - 0.5, y / 256 - 0.5);
      mask.data[y * 256 + x] = Math.round(255 * Math.min(1, Math.max(0, (0.31 - r) / 0.03)));
    }
  }
  return { image, modelInput, mask };
}

/** The scene's photo as the bytes a request brings (PNG, so that nothing is lost). */
const photoBytes = (image: RawImage) => sharp(image.data, { raw: { width: image.width, height: image.height, channels: 3 } }).png().toBuffer();
const MAX_PIXELS = 50e6;
const rgbOf = (image: RawImage) => Buffer.from(image.data.filter((_, i) => i % 4 !== 3));
const alphaOf = (image: RawImage) => Buffer.from(image.data.filter((_, i) => i % 4 === 3));

const REFINED = { refine: DEFAULT_REFINE_SETTINGS };
const ORANGE = [220, 110, 40];
const GREEN = [60, 170, 90];
/** The scene's disc at (x, y) of the 600×400 photo: distance from its outline, in its own units (0.3 = the radius). */
const outlineDistance = (x: number, y: number) => Math.abs(Math.hypot((x + 0.5) / 600 - 0.5, (y + 0.5) / 400 - 0.5) - 0.3);
const distance = (a: ArrayLike<number>, b: number[]) => Math.hypot(a[0] - b[0], a[1] - b[1], a[2] - b[2]);

describe('the finish thread', () => {
  const finisher = new FinishThread();
  afterAll(() => finisher.close());

  it('decodes, refines and encodes as the same code does on this thread', async () => {
    const { image, modelInput, mask } = scene();
    const photo = await photoBytes(image);
    const refinement = finisher.begin(photo, { maxPixels: MAX_PIXELS, spec: { ...REFINED, pngCompression: 'small' } });
    refinement.prepare(modelInput);
    // finish moves the mask's pixels to the thread: it gets a copy, this test keeps the mask.
    const refined = await refinement.finish({ ...mask, data: mask.data.slice() });

    const local = await decodeImage(photo, { maxPixels: MAX_PIXELS, opaqueAlpha: true });
    const rgba = computeRefinedCutout({ image: local, modelInput, mask }, DEFAULT_REFINE_SETTINGS);
    expect(rgba).toBe(local);
    const expected = await encodePng(rgba, 'small');
    expect(refined.bytes.equals(expected)).toBe(true);
    expect([refined.width, refined.height]).toEqual([600, 400]);
    // The colours of some partial pixels did change: the comparison above means something.
    expect(rgbOf(local).equals(Buffer.from(image.data))).toBe(false);
    expect(refined.timings.encode).toBeGreaterThan(0);

    // And, from the scene itself rather than the code above: the alpha is no longer the mask
    // stretched; it is opaque inside the disc and gone outside it, visibly partial only along
    // its outline, and there the colour is the disc's orange (the green backdrop taken out),
    // black wherever the alpha is 0.
    const { data } = await sharp(refined.bytes).raw().toBuffer({ resolveWithObject: true });
    const apart = differenceFrom(alphaOf({ ...image, data, channels: 4 }), stretchedMask(mask, 600, 400));
    expect(apart.max, JSON.stringify(apart)).toBeGreaterThan(40);
    let [partial, offOutline, greenish, colouredInvisible] = [0, 0, 0, 0];
    for (let i = 0; i < 600 * 400; i++) {
      const [x, y, alpha] = [i % 600, Math.floor(i / 600), data[4 * i + 3]];
      const inside = Math.hypot((x + 0.5) / 600 - 0.5, (y + 0.5) / 400 - 0.5) < 0.3;
      if (outlineDistance(x, y) > 0.05) expect(Math.abs(alpha - (inside ? 255 : 0)), `pixel ${x},${y}`).toBeLessThanOrEqual(4);
      if (alpha === 0 && (data[4 * i] || data[4 * i + 1] || data[4 * i + 2])) colouredInvisible++;
      if (alpha === 0 || alpha === 255) continue;
      partial++;
      if (alpha >= 16 && alpha <= 239 && outlineDistance(x, y) > 0.03) offOutline++;
      if (distance(data.subarray(4 * i), GREEN) < distance(data.subarray(4 * i), ORANGE)) greenish++;
    }
    expect(partial).toBeGreaterThan(100);
    expect(offOutline / partial, `${offOutline} of ${partial} partial pixels away from the outline`).toBeLessThan(0.02);
    expect([greenish, colouredInvisible]).toEqual([0, 0]);
  });

  it('without refinement, stretches the mask as the alpha and keeps the photo\'s colours, black where invisible', async () => {
    const { image, mask } = scene();
    const photo = await photoBytes(image);
    const stretched = finisher.begin(photo, { maxPixels: MAX_PIXELS, spec: {} });
    stretched.prepare(scene().modelInput); // nothing to prepare: ignored
    const answer = await stretched.finish({ ...mask, data: mask.data.slice() });
    const { data, info } = await sharp(answer.bytes).raw().toBuffer({ resolveWithObject: true });
    expect([info.width, info.height, info.channels]).toEqual([600, 400, 4]);
    const alpha = (await scaleMask(mask, 600, 400)).data;
    expect(alphaOf({ ...image, data, channels: 4 }).equals(Buffer.from(alpha))).toBe(true);
    // The same from the scene itself: the mask sampled here, within a few levels (sharp's
    // linear kernel and this sampling place the pixels' centres a little differently).
    const apart = differenceFrom(alphaOf({ ...image, data, channels: 4 }), stretchedMask(mask, 600, 400));
    expect(apart.mean, JSON.stringify(apart)).toBeLessThan(1);
    expect(apart.max, JSON.stringify(apart)).toBeLessThan(20);
    const expectedRgb = Buffer.from(image.data.map((value, i) => (alpha[Math.floor(i / 3)] === 0 ? 0 : value)));
    expect(rgbOf({ ...image, data, channels: 4 }).equals(expectedRgb)).toBe(true);
    expect(new Set(alpha).size).toBeGreaterThan(10);
  });

  it('writes into an RGBA photo the alpha and colours it gives an RGB one beside it', () => {
    const { image, modelInput, mask } = scene();
    const rgb = { ...image, data: image.data.slice() };
    const alpha = computeRefinedCutout({ image: rgb, modelInput, mask }, DEFAULT_REFINE_SETTINGS);
    const rgba = { ...image, data: new Uint8Array(600 * 400 * 4).fill(255), channels: 4 as const };
    for (let p = 0; p < 600 * 400; p++) rgba.data.set(image.data.subarray(3 * p, 3 * p + 3), 4 * p);
    computeRefinedCutout({ image: rgba, modelInput, mask }, DEFAULT_REFINE_SETTINGS);

    expect(alphaOf(rgba).equals(Buffer.from(alpha.data))).toBe(true);
    expect(rgbOf(rgba).equals(Buffer.from(rgb.data))).toBe(true);
    // Transparent and opaque pixels both occur, and the transparent ones are black.
    const values = new Set(alpha.data);
    expect(values.has(0) && values.has(255) && values.size > 10).toBe(true);
    expect(rgba.data.subarray(0, 4)).toEqual(new Uint8Array([0, 0, 0, 0]));
  });

  it('forgets a cancelled refinement and goes on with the next', async () => {
    const { image, modelInput, mask } = scene();
    const photo = await photoBytes(image);
    const dropped = finisher.begin(photo, { maxPixels: MAX_PIXELS, spec: REFINED });
    dropped.cancel();
    dropped.prepare(modelInput); // ignored
    const next = finisher.begin(photo, { maxPixels: MAX_PIXELS, spec: REFINED });
    next.prepare(modelInput);
    expect((await next.finish(mask)).width).toBe(600);
  });

  it('refuses to finish before it has the model input', async () => {
    const { image, mask } = scene();
    await expect(finisher.begin(await photoBytes(image), { maxPixels: MAX_PIXELS, spec: REFINED }).finish(mask)).rejects.toThrow(/before it was prepared/);
  });

  it('reports a photo it cannot decode with the error code a request answers with', async () => {
    const { image, modelInput, mask } = scene();
    const photo = await photoBytes(image);
    const refinement = finisher.begin(photo.subarray(0, photo.length >> 1), { maxPixels: MAX_PIXELS, spec: REFINED });
    refinement.prepare(modelInput);
    const failure = await refinement.finish(mask).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(CutoutError);
    expect((failure as CutoutError).code).toBe('image_decode_failed');
    // The decoder's own message came across the thread as the cause, for the log.
    expect((failure as CutoutError).cause).toBeInstanceOf(Error);
  });

  it('answers what it is finishing, then stops, and refuses new work once closed', async () => {
    const { image, modelInput, mask } = scene();
    const photo = await photoBytes(image);
    const own = new FinishThread();
    const refinement = own.begin(photo, { maxPixels: MAX_PIXELS, spec: REFINED });
    refinement.prepare(modelInput);
    const finished = refinement.finish(mask);
    // Closing waits for the answer being computed rather than failing it.
    const closed = own.close();
    expect((await finished).width).toBe(600);
    await closed;
    expect(() => own.begin(photo, { maxPixels: MAX_PIXELS, spec: REFINED })).toThrow(/closed/);
  });
});
