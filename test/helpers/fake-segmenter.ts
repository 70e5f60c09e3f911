import type { Segmenter } from '../../src/model/onnx-segmenter.js';

/**
 * A stand-in for the model where a test is about scheduling, not pixels: answers a mask of
 * all foreground after `delayMs`, and counts its runs.
 */
export function fakeSegmenter(delayMs = 0): Segmenter & { runs: number } {
  const segmenter = {
    size: 1024,
    runs: 0,
    async run() {
      segmenter.runs++;
      await new Promise((resolve) => setTimeout(resolve, delayMs));
      return new Float32Array(1024 * 1024).fill(1);
    },
    close: async () => {},
  };
  return segmenter;
}
