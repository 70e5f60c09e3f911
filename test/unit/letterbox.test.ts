import sharp from 'sharp';
import { afterAll, describe, expect, it } from 'vitest';
import type { RawImage } from '../../src/image/raw-image.js';
import { letterboxBox, letterboxPicture, unletterboxProbabilities } from '../../src/model/letterbox.js';
import { findPreset } from '../../src/model/model-presets.js';
import type { Segmenter } from '../../src/model/segmenter.js';
import { FinishThread } from '../../src/pipeline/finish-thread.js';
import { removeBackground } from '../../src/pipeline/remove-background.js';

const SIZE = 64;

/** A `SIZE × SIZE` RGB picture whose every pixel is `value(x, y)` in all three channels. */
function picture(value: (x: number, y: number) => number): Uint8Array {
  return Uint8Array.from({ length: 3 * SIZE * SIZE }, (_, i) => value(Math.floor(i / 3) % SIZE, Math.floor(i / 3 / SIZE)));
}

const at = (data: Uint8Array | Float32Array, x: number, y: number, channels = 3) => data[(y * SIZE + x) * channels];

describe('letterbox geometry and resampling', () => {
  it('places the photo as anime-segmentation does: the longer side fills the square, centred, the shorter one rounded down', () => {
    expect(letterboxBox(1024, 2)).toEqual({ left: 0, top: 256, width: 1024, height: 512 });
    expect(letterboxBox(1024, 0.5)).toEqual({ left: 256, top: 0, width: 512, height: 1024 });
    // 640×480: int(1024 · 480 / 640) = 768 rows, (1024 − 768) // 2 = 128 above.
    expect(letterboxBox(1024, 640 / 480)).toEqual({ left: 0, top: 128, width: 1024, height: 768 });
    // 333×1000: int(1024 · 333 / 1000) = 340 columns, 684 // 2 = 342 to the left.
    expect(letterboxBox(1024, 333 / 1000)).toEqual({ left: 342, top: 0, width: 340, height: 1024 });
    expect(letterboxBox(1024, 1)).toEqual({ left: 0, top: 0, width: 1024, height: 1024 });
  });

  it('squeezes a wide photo’s stretched picture back into the middle rows, black above and below', () => {
    // The photo was 2:1, so its stretched picture doubled each row: rows 2k and 2k+1 are photo row k.
    const stretched = picture((_, y) => 10 + 4 * Math.floor(y / 2));
    const box = letterboxBox(SIZE, 2);
    const boxed = letterboxPicture(stretched, SIZE, box);
    for (let y = 0; y < SIZE; y++) {
      for (const x of [0, 17, SIZE - 1]) {
        const inside = y >= box.top && y < box.top + box.height;
        // Photo row k comes back at letterbox row top + k (within a level: the filter spans both copies).
        if (inside) expect(Math.abs(at(boxed, x, y) - (10 + 4 * (y - box.top)))).toBeLessThanOrEqual(2);
        else expect(at(boxed, x, y)).toBe(0);
      }
    }
  });

  it('squeezes a tall photo’s stretched picture into the middle columns', () => {
    const stretched = picture((x) => 200 - 3 * Math.floor(x / 2));
    const box = letterboxBox(SIZE, 0.5);
    const boxed = letterboxPicture(stretched, SIZE, box);
    for (let x = 0; x < SIZE; x++) {
      const inside = x >= box.left && x < box.left + box.width;
      if (inside) expect(Math.abs(at(boxed, x, 5) - (200 - 3 * (x - box.left)))).toBeLessThanOrEqual(2);
      else expect(at(boxed, x, 5)).toBe(0);
    }
  });

  it('reads the mask back from the box only, stretched to the whole square', () => {
    const box = letterboxBox(SIZE, 2);
    // Foreground exactly over the photo, and a full-strength answer in the padding that must be dropped.
    const probabilities = Float32Array.from({ length: SIZE * SIZE }, (_, i) => {
      const y = Math.floor(i / SIZE);
      return y >= box.top && y < box.top + box.height ? 0.25 + (0.5 * (y - box.top)) / (box.height - 1) : 1;
    });
    const mask = unletterboxProbabilities(probabilities, SIZE, box);
    expect(mask[0]).toBeCloseTo(0.25, 2);
    expect(mask[(SIZE - 1) * SIZE]).toBeCloseTo(0.75, 2);
    // The middle of the photo, in the middle of the square: a straight line from top to bottom.
    expect(mask[(SIZE / 2) * SIZE + 7]).toBeCloseTo(0.5, 1);
    for (let y = 1; y < SIZE; y++) expect(mask[y * SIZE]).toBeGreaterThanOrEqual(mask[(y - 1) * SIZE]);
  });

  it('reads a tall photo’s mask back from its columns', () => {
    const box = letterboxBox(SIZE, 0.5);
    const probabilities = Float32Array.from({ length: SIZE * SIZE }, (_, i) => (i % SIZE >= box.left && i % SIZE < box.left + box.width ? 0.4 : 0));
    const mask = unletterboxProbabilities(probabilities, SIZE, box);
    expect(Math.min(...mask)).toBeCloseTo(0.4, 5);
    expect(Math.max(...mask)).toBeCloseTo(0.4, 5);
  });

  it('isnet-anime is the preset that letterboxes, as its reference does', () => {
    expect(findPreset('isnet-anime')!.processing.fit).toBe('letterbox');
    expect(findPreset('birefnet-general')!.processing.fit ?? 'stretch').toBe('stretch');
  });
});

describe('the pipeline tells a letterboxing model the shape of what it sees', () => {
  const finisher = new FinishThread();
  afterAll(() => finisher.close());

  function recording(fit: Segmenter['fit']): Segmenter & { aspects: (number | undefined)[] } {
    const segmenter = {
      size: SIZE,
      fit,
      aspects: [] as (number | undefined)[],
      async segment(pictures: readonly RawImage[], aspect?: number) {
        segmenter.aspects.push(aspect);
        return pictures.map(() => ({ data: new Uint8Array(SIZE * SIZE).fill(255), width: SIZE, height: SIZE, channels: 1 as const }));
      },
      close: async () => {},
    };
    return segmenter;
  }

  it('passes the photo’s width / height (after EXIF orientation), or the region’s, and nothing to a model that stretches', async () => {
    // 90×30, stored sideways (EXIF 6): the photo is 30 wide and 90 tall.
    const photo = await sharp({ create: { width: 90, height: 30, channels: 3, background: '#808080' } }).withMetadata({ orientation: 6 }).jpeg().toBuffer();
    const letterboxing = recording('letterbox');
    await removeBackground(photo, { segmenter: letterboxing, finisher, maxPixels: 1e6, refine: false });
    expect(letterboxing.aspects).toEqual([30 / 90]);
    const stretching = recording('stretch');
    await removeBackground(photo, { segmenter: stretching, finisher, maxPixels: 1e6, refine: false });
    expect(stretching.aspects).toEqual([undefined]);
  });
});
