import { describe, expect, it } from 'vitest';
import type { RawImage } from '../../src/image/raw-image.js';
import { firstLookDoubt, needsSecondLook, readFirstLook, SECOND_LOOK_THRESHOLD } from '../../src/pipeline/second-look.js';
import { uncertaintyOf } from '../../src/pipeline/views.js';

const SIZE = 64;

/**
 * A first-look mask: a 10×10 subject whose left column starts at `left`, sure (255) but for
 * `hesitant` of its pixels, which are at ½ (128) and so count fully as hesitation.
 */
function firstLook(left: number, hesitant: number): RawImage {
  const data = new Uint8Array(SIZE * SIZE);
  let n = 0;
  for (let y = 20; y < 30; y++) for (let x = left; x < left + 10; x++) data[y * SIZE + x] = n++ < hesitant ? 128 : 255;
  return { data, width: SIZE, height: SIZE, channels: 1 };
}

describe('quality=auto\'s rule', () => {
  it('reads the first look\'s hesitation as fast\'s X-Uncertainty, and whether the frame cuts the subject', () => {
    const inside = readFirstLook(firstLook(20, 12));
    expect(inside).toEqual({ subject: true, touchesFrame: false, hesitation: uncertaintyOf([firstLook(20, 12).data]) });
    expect(readFirstLook(firstLook(0, 12)).touchesFrame).toBe(true);
    expect(readFirstLook(firstLook(SIZE - 10, 12)).touchesFrame).toBe(true);
    expect(readFirstLook(firstLook(20, 0)).hesitation).toBe(0);
  });

  it('takes a second look at a hesitant subject the frame cuts, and needs twice the doubt inside the frame', () => {
    // 12 of 100 pixels at ½: a hesitation of about 0.12, between the threshold and twice it.
    const hesitation = readFirstLook(firstLook(20, 12)).hesitation;
    expect(hesitation).toBeGreaterThan(SECOND_LOOK_THRESHOLD);
    expect(hesitation).toBeLessThan(2 * SECOND_LOOK_THRESHOLD);
    expect(needsSecondLook(firstLook(0, 12))).toBe(true);
    expect(needsSecondLook(firstLook(20, 12))).toBe(false);
    expect(needsSecondLook(firstLook(20, 25))).toBe(true);
    expect(needsSecondLook(firstLook(0, 5))).toBe(false);
    expect(needsSecondLook(firstLook(20, 0))).toBe(false);
  });

  it('takes no second look when the first finds no subject, however hesitant', () => {
    const faint: RawImage = { data: new Uint8Array(SIZE * SIZE).fill(100), width: SIZE, height: SIZE, channels: 1 };
    expect(uncertaintyOf([faint.data])).toBe(1);
    expect(firstLookDoubt(readFirstLook(faint))).toBe(0);
    expect(needsSecondLook(faint)).toBe(false);
  });
});
