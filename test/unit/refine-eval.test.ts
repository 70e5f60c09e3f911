import { describe, expect, it } from 'vitest';
import { composeOver, fringeScores, SCREEN_GREEN } from '../../scripts/eval/fringe.js';
import { memoSegmenter } from '../../scripts/eval/memo-segmenter.js';
import { modesFor } from '../../scripts/eval/modes.js';
import type { RawImage } from '../../src/image/raw-image.js';

describe("the eval's green-screen test", () => {
  // Two pixels of a red subject: one opaque, one half covered.
  const foreground = Uint8Array.of(200, 40, 40, 200, 40, 40);
  const matte = Uint8Array.of(255, 128);
  const composite = composeOver(foreground, matte, SCREEN_GREEN);

  it('lays the foreground over the screen colour with the matte', () => {
    expect([...composite]).toEqual([200, 40, 40, Math.round((128 / 255) * 200), Math.round((128 / 255) * 40 + (127 / 255) * 177), Math.round((128 / 255) * 40 + (127 / 255) * 64)]);
  });

  it('scores a perfect cut-out 0, and a cut-out that kept the green by how far it shows on white and black', () => {
    const perfect = Uint8Array.of(200, 40, 40, 255, 200, 40, 40, 128);
    expect(fringeScores(perfect, foreground, matte)).toEqual({ white: 0, black: 0, pixels: 1 });
    const green = Uint8Array.of(200, 40, 40, 255, ...composite.subarray(3, 6), 128);
    const scores = fringeScores(green, foreground, matte);
    expect(scores.pixels).toBe(1); // only the partial pixel is compared
    const a = 128 / 255;
    const expected = [0, 1, 2].reduce((sum, c) => sum + Math.abs(a * composite[3 + c] - a * foreground[c]), 0) / 3;
    expect(scores.black).toBeCloseTo(expected, 9);
    expect(scores.white).toBeCloseTo(expected, 9); // same alpha: the background term cancels
  });
});

describe("the eval's model memo", () => {
  it('runs the model once for the same picture and again for another', async () => {
    const inner = {
      size: 2,
      calls: 0,
      async segment(pictures: readonly RawImage[]): Promise<RawImage[]> {
        inner.calls++;
        return pictures.map((picture) => {
          const mask = { data: Uint8Array.of(picture.data[0], 0, 0, 255), width: 2, height: 2, channels: 1 as const };
          picture.data.fill(0); // the real segmenter takes the picture over
          return mask;
        });
      },
      close: async () => {},
    };
    const memo = memoSegmenter(inner);
    const input = (first = 128): RawImage => ({ data: Uint8Array.of(first, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0), width: 2, height: 2, channels: 3 });
    const [first] = await memo.segment([input()]);
    const [second] = await memo.segment([input()]);
    expect([...second.data]).toEqual([...first.data]);
    second.data[0] = 9; // a caller changing its copy does not change the memo
    expect((await memo.segment([input()]))[0].data[0]).toBe(128);
    const other = input();
    other.data[11] = 1;
    await memo.segment([other]);
    expect([inner.calls, memo.runs]).toEqual([2, 2]);
    // Two views, one of them seen before: only the new one runs, and the answers keep their order.
    const both = await memo.segment([input(), input(7)]);
    expect(both.map((mask) => mask.data[0])).toEqual([128, 7]);
    expect([inner.calls, memo.runs]).toEqual([3, 3]);
  });
});

describe("the eval's modes", () => {
  it('compares by default and takes on, off or compare', () => {
    expect([modesFor(undefined), modesFor('compare'), modesFor('on'), modesFor('off'), modesFor('yes')]).toEqual([['raw', 'refined'], ['raw', 'refined'], ['refined'], ['raw'], undefined]);
    expect([modesFor('on', 'compare'), modesFor(undefined, 'best'), modesFor('on', 'most')]).toEqual([['refined', 'best', 'auto'], ['best-raw', 'best'], undefined]);
    expect([modesFor('off', 'auto'), modesFor('compare', 'compare')]).toEqual([['auto-raw'], ['raw', 'refined', 'best-raw', 'best', 'auto-raw', 'auto']]);
  });
});
