import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { beforeAll, describe, expect, it } from 'vitest';
import type { RawImage } from '../src/image/raw-image.js';
import { findPreset } from '../src/model/model-presets.js';
import { ISNET_PROCESSING, type ModelProcessing } from '../src/model/model-processing.js';
import { loadSegmenter, type OnnxSegmenter } from '../src/model/onnx-segmenter.js';
import { decodeForModel } from '../src/pipeline/decode.js';
import { sharedFp32Segmenter } from './helpers/app.js';
import { makePhoto } from './helpers/images.js';
import { buildBirefnetShaped, buildU2netShaped } from './helpers/shaped-models.js';

// The bundled IS-Net wrapped so that it has another family's inputs and outputs
// (helpers/shaped-models.ts): run with that family's preset processing, it must give IS-Net's
// own soft mask back. IS-Net is robust enough that a wrong normalisation or a missing sigmoid
// still finds the ball, so the masks are compared level by level, not thresholded.

const dataDir = join(tmpdir(), 'cutout-test-model');
const BIREFNET = findPreset('birefnet-general-lite')!.processing;
const U2NET = findPreset('u2net')!.processing;

/** Photos of different shapes and tones, each decoded to the model's square by the pipeline's own decoder. */
async function photos(size: number): Promise<RawImage[]> {
  const sources = [await makePhoto('jpeg', 640, 480), await makePhoto('png', 360, 540), await sharp(await makePhoto('png', 500, 500)).modulate({ brightness: 0.6, hue: 120 }).jpeg().toBuffer()];
  return Promise.all(sources.map((bytes) => decodeForModel(bytes, { maxPixels: 1e8, size })));
}

/** How far two 8-bit masks are apart: the largest difference, and the mean one. */
function difference(a: RawImage, b: RawImage): { max: number; mean: number } {
  expect([a.width, a.height]).toEqual([b.width, b.height]);
  let max = 0;
  let sum = 0;
  for (let i = 0; i < a.data.length; i++) {
    const d = Math.abs(a.data[i] - b.data[i]);
    max = Math.max(max, d);
    sum += d;
  }
  return { max, mean: sum / a.data.length };
}

/** The same soft mask: within a few 8-bit levels everywhere. */
const sameSoftMask = ({ max, mean }: { max: number; mean: number }) => max <= 4 && mean <= 0.1;

const segment = async (segmenter: OnnxSegmenter, picture: RawImage) => (await segmenter.segment([{ ...picture, data: picture.data.slice() }]))[0];

describe('model families: IS-Net wrapped as another family gives IS-Net’s own cut under that family’s processing', () => {
  let isnet: OnnxSegmenter;
  let birefnetPath: string;
  let u2netPath: string;

  beforeAll(async () => {
    // The float32 model the shaped ones are built from, so that only the family's processing differs.
    isnet = await sharedFp32Segmenter();
    birefnetPath = await buildBirefnetShaped(dataDir);
    u2netPath = await buildU2netShaped(dataDir);
  }, 180_000);

  /** The photos at 1024 and IS-Net's own masks of them, made once for the tests that compare with them. */
  let references: Promise<{ pictures: RawImage[]; masks: RawImage[] }> | undefined;
  const isnetReferences = () =>
    (references ??= photos(1024).then(async (pictures) => ({ pictures, masks: await Promise.all(pictures.map((picture) => segment(isnet, picture))) })));

  const withModel = async (path: string, processing: ModelProcessing, run: (segmenter: OnnxSegmenter) => Promise<void>) => {
    const segmenter = await loadSegmenter(path, { threads: 1, processing });
    try {
      await run(segmenter);
    } finally {
      await segmenter.close();
    }
  };

  it('BiRefNet-shaped (ImageNet input, logits out) with the BiRefNet preset: IS-Net’s soft mask within a few levels; without the sigmoid, or with IS-Net’s normalisation, not', { timeout: 300_000 }, async () => {
    expect(BIREFNET).toMatchObject({ inputSize: 1024, scale: 255, activation: 'sigmoid', outputIndex: 0 });
    const { pictures, masks: expected } = await isnetReferences();
    // The photos have a subject and a background, with soft edges between.
    for (const { data } of expected) {
      expect(data.includes(255) && data.includes(0)).toBe(true);
      expect(data.filter((v) => v > 10 && v < 245).length).toBeGreaterThan(500);
    }

    const mutations: [string, ModelProcessing][] = [
      ['the BiRefNet preset', BIREFNET],
      ['no sigmoid', { ...BIREFNET, activation: 'none' }],
      ['IS-Net’s normalisation', { ...ISNET_PROCESSING, activation: 'sigmoid' }],
    ];
    const found: Record<string, { max: number; mean: number }[]> = {};
    for (const [label, processing] of mutations) {
      await withModel(birefnetPath, processing, async (segmenter) => {
        found[label] = [];
        for (const [i, picture] of pictures.entries()) found[label].push(difference(await segment(segmenter, picture), expected[i]));
      });
    }
    for (const result of found['the BiRefNet preset']) expect(sameSoftMask(result), JSON.stringify(result)).toBe(true);
    // Each mutation moves the soft mask well past the tolerance on every photo.
    for (const result of found['no sigmoid']) expect(sameSoftMask(result), JSON.stringify(result)).toBe(false);
    for (const result of found['IS-Net’s normalisation']) expect(sameSoftMask(result), JSON.stringify(result)).toBe(false);
  });

  it('U²-Net-shaped (320 × 320, seven outputs, the mask first) with the U²-Net preset: IS-Net’s mask at 320; the other outputs would not be', { timeout: 300_000 }, async () => {
    expect(U2NET).toMatchObject({ inputSize: 320, outputIndex: 0, activation: 'none' });
    const { masks: own } = await isnetReferences();
    const small = await photos(320);
    await withModel(u2netPath, U2NET, async (segmenter) => {
      expect(segmenter.size).toBe(320);
      for (const [i, picture] of small.entries()) {
        const mask = await segment(segmenter, picture);
        expect([mask.width, mask.height, mask.channels]).toEqual([320, 320, 1]);
        // IS-Net's own mask of the photo, brought to 320: the wrapped model sees the photo
        // through a 320 picture, so the edges differ a little, not the cut.
        const resized = await sharp(own[i].data, { raw: { width: 1024, height: 1024, channels: 1 } }).resize(320, 320).extractChannel(0).raw().toBuffer();
        const { mean } = difference(mask, { data: resized, width: 320, height: 320, channels: 1 });
        expect(mean).toBeLessThan(3);
        expect(mask.data[160 * 320 + 160]).toBeGreaterThan(240);
        expect(mask.data[0]).toBeLessThan(15);
      }
    });
    // Output 1 is the mask's inverse: read instead, the centre is background.
    await withModel(u2netPath, { ...U2NET, outputIndex: 1 }, async (segmenter) => {
      const mask = await segment(segmenter, small[0]);
      expect(mask.data[160 * 320 + 160]).toBeLessThan(15);
    });
  });

  it('a processing that does not fit the file is refused at load, naming what differs', { timeout: 120_000 }, async () => {
    await expect(loadSegmenter(u2netPath, { threads: 1, processing: { ...U2NET, inputSize: 1024 } })).rejects.toThrow(/expected \[1, 3, 1024, 1024\]/);
    await expect(loadSegmenter(u2netPath, { threads: 1, processing: { ...U2NET, outputIndex: 7 } })).rejects.toThrow(/has 7 outputs; its processing reads output 7/);
  });
});
