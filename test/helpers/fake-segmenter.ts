import type { RawImage } from '../../src/image/raw-image.js';
import type { Segmenter } from '../../src/model/segmenter.js';

/** A mask of the given size, every pixel `value`. */
export function uniformMask(size: number, value: number): RawImage {
  return { data: new Uint8Array(size * size).fill(value), width: size, height: size, channels: 1 };
}

/**
 * A stand-in for the model where a test is about scheduling, not pixels: answers a mask of
 * all foreground after `delayMs`, and counts its runs.
 */
export function fakeSegmenter(delayMs = 0): Segmenter & { runs: number } {
  const segmenter = {
    size: 1024,
    runs: 0,
    async segment(pictures: readonly RawImage[]) {
      segmenter.runs++;
      await new Promise((resolve) => setTimeout(resolve, delayMs));
      return pictures.map(() => uniformMask(1024, 255));
    },
    close: async () => {},
  };
  return segmenter;
}
