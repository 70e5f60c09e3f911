import { describe, expect, it } from 'vitest';
import { SUBJECT_ALPHA, VisibleBounds } from '../../src/image/box.js';
import type { RawImage } from '../../src/image/raw-image.js';
import { visibleBox } from '../../src/pipeline/frame.js';
import { stretchAlpha } from '../../src/pipeline/stretch-alpha.js';

/** A 20×10 RGBA image, transparent but for `alphas` at `[x, y]`. */
function imageWith(alphas: [number, number, number][]): RawImage {
  const data = new Uint8Array(20 * 10 * 4);
  for (const [x, y, alpha] of alphas) data[4 * (y * 20 + x) + 3] = alpha;
  return { data, width: 20, height: 10, channels: 4 };
}

describe("the subject's box", () => {
  it('leaves out pixels fainter than SUBJECT_ALPHA, which no background shows', () => {
    const subject: [number, number, number][] = [[10, 4, 255], [12, 6, 128], [11, 5, SUBJECT_ALPHA]];
    expect(visibleBox(imageWith(subject))).toEqual({ left: 10, top: 4, width: 3, height: 3 });
    // Stray haze of alpha 1 to SUBJECT_ALPHA − 1 in the corners, as the int8 model leaves.
    const haze: [number, number, number][] = [[0, 0, 1], [19, 9, SUBJECT_ALPHA - 1], [0, 9, 2]];
    expect(visibleBox(imageWith([...subject, ...haze]))).toEqual({ left: 10, top: 4, width: 3, height: 3 });
    expect(visibleBox(imageWith(haze))).toBeUndefined();
  });

  it('is the same whether the alpha is stretched from the mask or scanned afterwards', async () => {
    // A 20×10 mask: a subject in the middle, faint haze at the left edge.
    const mask = new Uint8Array(200);
    for (let y = 3; y < 7; y++) for (let x = 8; x < 14; x++) mask[y * 20 + x] = 255;
    mask[5 * 20] = 1;
    mask[2 * 20 + 1] = SUBJECT_ALPHA - 1;
    const photo = { data: new Uint8Array(800).fill(200), width: 20, height: 10, channels: 4 as const };
    const bounds = new VisibleBounds();
    const cut = await stretchAlpha(photo, { data: mask, width: 20, height: 10, channels: 1 }, bounds);
    expect(bounds.box()).toEqual({ left: 8, top: 3, width: 6, height: 4 });
    expect(visibleBox(cut)).toEqual(bounds.box());
    // The faint pixels keep their alpha in the answer: only the box leaves them out.
    expect(cut.data[4 * (5 * 20) + 3]).toBe(1);
  });
});
