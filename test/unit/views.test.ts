import sharp from 'sharp';
import { afterAll, describe, expect, it } from 'vitest';
import type { RawImage } from '../../src/image/raw-image.js';
import type { Segmenter } from '../../src/model/segmenter.js';
import { FinishThread } from '../../src/pipeline/finish-thread.js';
import { removeBackground } from '../../src/pipeline/remove-background.js';
import { fuseViews, mirrorImage, uncertaintyOf } from '../../src/pipeline/views.js';

const SIZE = 64;

/** A fake model that records the pictures it is shown and answers each with `answer(picture)`. */
function recordingSegmenter(answer: (picture: RawImage) => Uint8Array): Segmenter & { seen: Uint8Array[][] } {
  const segmenter = {
    size: SIZE,
    seen: [] as Uint8Array[][],
    async segment(pictures: readonly RawImage[]) {
      segmenter.seen.push(pictures.map((picture) => picture.data.slice()));
      return pictures.map((picture) => ({ data: answer(picture), width: SIZE, height: SIZE, channels: 1 as const }));
    },
    close: async () => {},
  };
  return segmenter;
}

/** Foreground on the left half of whatever it is shown: an answer that ignores the picture. */
const leftHalf = () => Uint8Array.from({ length: SIZE * SIZE }, (_, i) => (i % SIZE < SIZE / 2 ? 255 : 0));
/** Foreground where the picture is bright: an answer that follows the picture. */
const brightPixels = (picture: RawImage) => Uint8Array.from({ length: SIZE * SIZE }, (_, i) => (picture.data[3 * i] > 128 ? 255 : 0));

/** A white square near the photo's left edge, on black, 64×64 like the model's input. */
const photo = () =>
  sharp({ create: { width: SIZE, height: SIZE, channels: 3, background: '#000' } })
    .composite([{ input: { create: { width: 16, height: 24, channels: 3, background: '#fff' } }, left: 4, top: 20 }])
    .png()
    .toBuffer();

async function alphaOf(png: Buffer): Promise<Uint8Array> {
  const { data } = await sharp(png).extractChannel(3).raw().toBuffer({ resolveWithObject: true });
  return data;
}

const isMirrorSymmetric = (alpha: Uint8Array) => alpha.every((value, i) => value === alpha[Math.floor(i / SIZE) * SIZE + (SIZE - 1 - (i % SIZE))]);

describe('the views of a photo', () => {
  const finisher = new FinishThread();
  afterAll(() => finisher.close());
  const remove = async (segmenter: Segmenter, quality: 'fast' | 'best') => removeBackground(await photo(), { segmenter, finisher, maxPixels: 1e6, refine: false, quality });

  it('fast shows the model the photo once; best shows it the photo and then its mirror', async () => {
    const fast = recordingSegmenter(brightPixels);
    await remove(fast, 'fast');
    expect(fast.seen.map((call) => call.length)).toEqual([1]);
    const best = recordingSegmenter(brightPixels);
    await remove(best, 'best');
    expect(best.seen.map((call) => call.length)).toEqual([2]);
    const [picture, mirror] = best.seen[0];
    expect(Buffer.from(picture).equals(Buffer.from(fast.seen[0][0]))).toBe(true);
    const mirrored = mirrorImage({ data: picture, width: SIZE, height: SIZE, channels: 3 }).data;
    expect(Buffer.from(mirror).equals(Buffer.from(mirrored))).toBe(true);
    expect(Buffer.from(mirror).equals(Buffer.from(picture))).toBe(false);
  });

  it('mirrors each answer back before fusing: a one-sided answer fused with its mirror is symmetric', async () => {
    const fast = await remove(recordingSegmenter(leftHalf), 'fast');
    expect(isMirrorSymmetric(await alphaOf(fast.bytes))).toBe(false);
    const best = await remove(recordingSegmenter(leftHalf), 'best');
    const alpha = await alphaOf(best.bytes);
    expect(isMirrorSymmetric(alpha)).toBe(true);
    // The views disagree everywhere: every pixel is half sure, and the cut as doubtful as can be.
    expect(new Set(alpha)).toEqual(new Set([128]));
    expect(best.uncertainty).toBe(1);
  });

  it('fast hands the model\'s own mask to the finishing, every byte of it', async () => {
    let seed = 7;
    const noise = Uint8Array.from({ length: SIZE * SIZE }, () => ((seed = (seed * 1103515245 + 12345) >>> 0) >>> 24));
    const fast = await remove(recordingSegmenter(() => noise.slice()), 'fast');
    // The photo is the model's size, so the unrefined alpha is the mask itself.
    expect(Buffer.from(await alphaOf(fast.bytes)).equals(Buffer.from(noise))).toBe(true);
  });

  it('keeps the subject where it is when the views agree, with no doubt', async () => {
    const fast = await remove(recordingSegmenter(brightPixels), 'fast');
    const best = await remove(recordingSegmenter(brightPixels), 'best');
    expect(Buffer.from(await alphaOf(best.bytes)).equals(Buffer.from(await alphaOf(fast.bytes)))).toBe(true);
    expect(best.foreground).toEqual(fast.foreground);
    expect(best.uncertainty).toBe(0);
  });
});

describe('fuseViews', () => {
  const mask = (...values: number[]): RawImage => ({ data: Uint8Array.from(values), width: values.length, height: 1, channels: 1 });

  it('gives one view back as it is', () => {
    const only = mask(0, 7, 128, 255);
    expect(fuseViews(['photo'], [only]).mask).toBe(only);
  });

  it('keeps what both views are sure of, and leaves no ghost where one is unsure', () => {
    // Photo view, and the mirror view as the model saw it (mirrored): [0, 255, 200, 255] upright.
    const { mask: fused } = fuseViews(['photo', 'mirror'], [mask(0, 255, 255, 128), mask(255, 200, 255, 0)]);
    expect(fused.data[0]).toBe(0);
    expect(fused.data[1]).toBe(255);
    // One view sure (255), the other a little unsure (200): a mean of logits stays near sure,
    // where a mean of probabilities would give 228.
    expect(fused.data[2]).toBeGreaterThan(240);
    // One view at ½, the other sure: the sure one wins (a mean of probabilities: 192).
    expect(fused.data[3]).toBeGreaterThan(245);
  });

  it('refuses masks that do not match the views', () => {
    expect(() => fuseViews(['photo', 'mirror'], [mask(1)])).toThrow(/2 views but 1 masks/);
  });
});

describe('uncertaintyOf', () => {
  it('is 0 for sure masks that agree and 1 for masks that disagree over the whole subject', () => {
    const subject = Uint8Array.of(0, 0, 255, 255);
    expect(uncertaintyOf([subject])).toBe(0);
    expect(uncertaintyOf([subject, subject])).toBe(0);
    expect(uncertaintyOf([subject, Uint8Array.of(255, 255, 0, 0)])).toBe(1);
  });

  it('measures disagreement over the subject, not the photo', () => {
    // One pixel of four disagrees by half; the subject is two pixels: ½ / 2.
    expect(uncertaintyOf([Uint8Array.of(0, 0, 255, 255), Uint8Array.of(0, 0, 255, 255 - 127.5)])).toBeCloseTo(0.25, 2);
  });

  it('reads one mask\'s own hesitation: ½ everywhere is as doubtful as can be', () => {
    expect(uncertaintyOf([Uint8Array.of(128, 128)])).toBeCloseTo(1, 2);
    expect(uncertaintyOf([Uint8Array.of(0, 0)])).toBe(0);
  });
});
