import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RawImage } from '../src/image/raw-image.js';
import { letterboxBox, letterboxPicture, unletterboxProbabilities } from '../src/model/letterbox.js';
import { ISNET_PROCESSING } from '../src/model/model-processing.js';
import { loadSegmenter, type OnnxSegmenter } from '../src/model/onnx-segmenter.js';
import { decodeForModel } from '../src/pipeline/decode.js';
import { sharedFp32Segmenter } from './helpers/app.js';
import { makePhoto } from './helpers/images.js';
import { fp32ModelPath } from './helpers/test-model.js';

// A model whose processing letterboxes (isnet-anime's) is run on its model thread with the
// photo fitted whole into its square, and its mask comes back stretched like the pipeline's
// pictures. Checked with the bundled IS-Net under that processing: its answer must be the one
// the same model gives when it is handed the letterbox by hand and its mask is cut out of the
// box, and not the one it gives the stretched picture.

const max = (a: Uint8Array, b: Uint8Array) => a.reduce((most, value, i) => Math.max(most, Math.abs(value - b[i])), 0);

describe('a letterboxing model on its own thread', () => {
  let stretching: OnnxSegmenter;
  let letterboxing: OnnxSegmenter;
  beforeAll(async () => {
    stretching = await sharedFp32Segmenter();
    letterboxing = await loadSegmenter(await fp32ModelPath(), { threads: 1, processing: { ...ISNET_PROCESSING, fit: 'letterbox' } });
  }, 180_000);
  afterAll(() => letterboxing?.close());

  it('sees the photo letterboxed and answers a stretched mask', async () => {
    const size = stretching.size;
    // A 2:1 photo: stretched, its subject is twice as tall as in the letterbox.
    const picture = await decodeForModel(await makePhoto('jpeg', 800, 400), { maxPixels: 1e8, size });
    const copy = (image: RawImage) => ({ ...image, data: image.data.slice() });

    const [answered] = await letterboxing.segment([copy(picture)], 2);
    const box = letterboxBox(size, 2);
    const [boxedMask] = await stretching.segment([{ ...picture, data: letterboxPicture(picture.data, size, box) }]);
    const byHand = unletterboxProbabilities(Float32Array.from(boxedMask.data, (v) => v / 255), size, box);
    const expected = Uint8Array.from(byHand, (p) => Math.round(p * 255));
    const [stretched] = await stretching.segment([copy(picture)]);

    // The same cut as by hand, within the 8-bit rounding of the mask read back…
    expect(max(answered.data, expected)).toBeLessThanOrEqual(2);
    // …and not the stretched picture's: IS-Net finds the ball either way (0.1 level apart on
    // average here), but its edge moves by tens of levels where the two pictures differ.
    expect(max(stretched.data, expected)).toBeGreaterThan(16);

    // A square photo needs no letterbox: the same answer as stretching.
    const square = await decodeForModel(await makePhoto('png', 500, 500), { maxPixels: 1e8, size });
    const [squareBoxed] = await letterboxing.segment([copy(square)], 1);
    const [squareStretched] = await stretching.segment([copy(square)]);
    expect(max(squareBoxed.data, squareStretched.data)).toBe(0);
  }, 120_000);
});
