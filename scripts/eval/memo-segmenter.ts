import type { RawImage } from '../../src/image/raw-image.js';
import type { Segmenter } from '../../src/model/segmenter.js';

/** Pictures remembered: every view of the image being scored (the photo and its mirror). */
const REMEMBERED = 4;

/**
 * A segmenter that remembers its last answers, picture by picture: when the eval puts the same
 * image through the pipeline once per mode (raw, refined, fast, best, …), the model runs once
 * per view and the other passes get a copy of its mask. A picture is compared byte by byte,
 * so nothing stale can be returned; it is copied first because the real segmenter takes it
 * over. `runs` counts the pictures the model really ran.
 */
export function memoSegmenter(segmenter: Segmenter): Segmenter & { runs: number } {
  const remembered: { input: Buffer; mask: RawImage }[] = [];
  const copy = (mask: RawImage): RawImage => ({ ...mask, data: mask.data.slice() });
  const memo = {
    size: segmenter.size,
    runs: 0,
    async segment(pictures: readonly RawImage[]): Promise<RawImage[]> {
      const found = pictures.map((picture) => remembered.find(({ input }) => input.equals(picture.data)));
      const missing = pictures.filter((_, i) => !found[i]);
      const inputs = missing.map((picture) => Buffer.from(picture.data));
      const masks = missing.length > 0 ? await segmenter.segment(missing) : [];
      memo.runs += missing.length;
      for (const [i, mask] of masks.entries()) remembered.unshift({ input: inputs[i], mask: copy(mask) });
      remembered.splice(REMEMBERED);
      let next = 0;
      return found.map((hit) => (hit ? copy(hit.mask) : masks[next++]));
    },
    close: () => segmenter.close(),
  };
  return memo;
}
