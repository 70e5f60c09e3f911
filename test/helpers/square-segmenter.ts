import type { RawImage } from '../../src/image/raw-image.js';
import type { Segmenter } from '../../src/model/segmenter.js';

/**
 * A tiny model (16×16) whose mask is a centred square, for tests about what happens around
 * the model: it answers at once, except that after `hold(n)` every run past the `n`th waits
 * until `release()`.
 */
export type SquareSegmenter = Segmenter & { runs: number; hold(afterRuns?: number): void; release(): void };

export function squareSegmenter(): SquareSegmenter {
  const size = 16;
  const mask = new Uint8Array(size * size);
  for (let y = 4; y < 12; y++) mask.fill(255, y * size + 4, y * size + 12);
  let holdAfter = Infinity;
  const waiting: (() => void)[] = [];
  const segmenter: SquareSegmenter = {
    size,
    runs: 0,
    async segment(pictures: readonly RawImage[]) {
      segmenter.runs++;
      if (segmenter.runs > holdAfter) await new Promise<void>((resolve) => waiting.push(resolve));
      return pictures.map(() => ({ data: mask.slice(), width: size, height: size, channels: 1 as const }));
    },
    hold(afterRuns?: number) {
      holdAfter = afterRuns ?? segmenter.runs;
    },
    release() {
      holdAfter = Infinity;
      for (const resolve of waiting.splice(0)) resolve();
    },
    close: async () => {},
  };
  return segmenter;
}
