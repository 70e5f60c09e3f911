import { afterAll, describe, expect, it } from 'vitest';
import type { RawImage } from '../../src/pipeline/raw-image.js';
import { Refiner } from '../../src/pipeline/refine.js';
import { computeRefinedCutout, DEFAULT_REFINE_SETTINGS } from '../../src/pipeline/refine-cutout.js';

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

describe('the refine thread', () => {
  const refiner = new Refiner();
  afterAll(() => refiner.close());

  it('gives what the same code gives on this thread, and leaves the caller\'s image as it was', async () => {
    const { image, modelInput, mask } = scene();
    const before = image.data.slice();
    const refinement = refiner.begin(modelInput);
    refinement.setImage(image);
    const cutout = await refinement.finish(mask);

    const local = { ...image, data: image.data.slice() };
    const alpha = computeRefinedCutout({ image: local, modelInput, mask }, DEFAULT_REFINE_SETTINGS);
    expect(Buffer.from(cutout.alpha.data).equals(Buffer.from(alpha.data))).toBe(true);
    expect(Buffer.from(cutout.colour.data).equals(Buffer.from(local.data))).toBe(true);
    expect(Buffer.from(image.data).equals(Buffer.from(before))).toBe(true);
    // The colours of some partial pixels did change: the comparison above means something.
    expect(Buffer.from(local.data).equals(Buffer.from(before))).toBe(false);
    // The photo went to the thread and came back in memory of its own, not memory shared
    // with the thread (which would live as long as the thread's garbage collector let it).
    expect(cutout.colour.data.buffer).toBeInstanceOf(ArrayBuffer);
    expect(cutout.colour.data.buffer).not.toBe(image.data.buffer);
  });

  it('forgets a cancelled refinement and goes on with the next', async () => {
    const { image, modelInput, mask } = scene();
    const dropped = refiner.begin(modelInput);
    dropped.cancel();
    dropped.setImage(image); // ignored
    const next = refiner.begin(modelInput);
    next.setImage(image);
    expect((await next.finish(mask)).alpha.width).toBe(600);
  });

  it('refuses to finish before it has the image', async () => {
    const { modelInput, mask } = scene();
    await expect(refiner.begin(modelInput).finish(mask)).rejects.toThrow(/before setImage/);
  });

  it('answers what it is finishing, then stops, and refuses new work once closed', async () => {
    const { image, modelInput, mask } = scene();
    const own = new Refiner();
    const refinement = own.begin(modelInput);
    refinement.setImage(image);
    const finished = refinement.finish(mask);
    // Closing waits for the answer being computed rather than failing it.
    const closed = own.close();
    expect((await finished).alpha.width).toBe(600);
    await closed;
    expect(() => own.begin(modelInput)).toThrow(/closed/);
  });
});
