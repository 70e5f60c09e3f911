import { loadSegmenter, type SegmenterOptions } from '../../src/model/onnx-segmenter.js';
import { decodeForModel } from '../../src/pipeline/decode.js';
import { needsSecondLook } from '../../src/pipeline/second-look.js';
import type { BenchImage } from './inputs.js';

/**
 * How many looks `quality=auto` takes on each bench photo: the first look's mask through the
 * rule the server applies (`second-look.ts`). The bench scales one photo to every size, so
 * `auto`'s times are those of one look or of two, whichever that photo gets; the report says
 * which, since the average over a mix of photos lies between.
 */
export async function autoLooksOf(images: readonly BenchImage[], modelPath: string, options: SegmenterOptions): Promise<Record<string, 1 | 2>> {
  const segmenter = await loadSegmenter(modelPath, options);
  try {
    const looks: Record<string, 1 | 2> = {};
    for (const image of images) {
      const [mask] = await segmenter.segment([await decodeForModel(image.bytes, { maxPixels: 1e9, size: segmenter.size })]);
      looks[image.label] = needsSecondLook(mask) ? 2 : 1;
    }
    return looks;
  } finally {
    await segmenter.close();
  }
}
