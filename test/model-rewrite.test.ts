import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import * as ort from 'onnxruntime-node';
import { assembleModel, MASK_OUTPUT } from '../src/model/assemble-model.js';
import { convertModelToFp32 } from '../src/model/fp32-model.js';
import { keepOnlyOutput } from '../src/model/mask-output-only.js';
import { loadSegmenter } from '../src/model/onnx-segmenter.js';
import { decodeForModel } from '../src/pipeline/decode.js';
import { ISNET_PROCESSING } from '../src/model/model-processing.js';
import { channelTables, toMask, toModelTensor } from '../src/model/model-tensor.js';
import { makePhoto } from './helpers/images.js';
import { disableOnnxRuntimeTelemetry } from '../src/model/onnx-runtime-telemetry.js';

disableOnnxRuntimeTelemetry();

describe("Cutout's rewrite of the bundled model", () => {
  // Two model loads and two passes on one thread: generous under a loaded CI machine.
  it('converts every float16 weight, drops the Casts and the unused outputs, and gives the original mask within 2e-3', { timeout: 180_000 }, async () => {
    const dataDir = join(tmpdir(), 'cutout-test-model');
    const originalPath = await assembleModel(dataDir, { rewrite: false });
    const fp32Path = await assembleModel(dataDir);
    expect(fp32Path).not.toBe(originalPath);

    const original = await readFile(originalPath);
    const { model, converted } = convertModelToFp32(original);
    expect(converted).toBeGreaterThan(100);
    // float16 weights take half the bytes of float32 ones: the file roughly doubles.
    expect(model.length / original.length).toBeGreaterThan(1.9);
    expect(model.includes(Buffer.from('graph_output_cast_0'))).toBe(false);
    // A model with nothing to convert comes back unchanged.
    expect(convertModelToFp32(model).converted).toBe(0);
    // The five side masks' heads go (a convolution, a Resize and a Sigmoid each, at least).
    const { model: maskOnly, droppedNodes } = keepOnlyOutput(model, MASK_OUTPUT);
    expect(droppedNodes).toBeGreaterThanOrEqual(15);
    expect(maskOnly.equals(await readFile(fp32Path))).toBe(true);
    const session = await ort.InferenceSession.create(fp32Path);
    expect(session.outputNames).toEqual([MASK_OUTPUT]);
    await session.release();

    const modelInput = await decodeForModel(await makePhoto('jpeg', 320, 240), { maxPixels: 1e8, size: 1024 });
    const input = toModelTensor(modelInput, channelTables(ISNET_PROCESSING));
    const [a, b] = await Promise.all([loadSegmenter(originalPath, { threads: 1 }), loadSegmenter(fp32Path, { threads: 1 })]);
    try {
      // runTensor() hands its input over to the worker thread, so each run gets its own copy.
      const given = input.slice();
      const [outA, outB] = [await a.runTensor(input.slice()), await b.runTensor(given)];
      expect(given.length).toBe(0);
      let maxDifference = 0;
      for (let i = 0; i < outA.length; i++) maxDifference = Math.max(maxDifference, Math.abs(outA[i] - outB[i]));
      expect(maxDifference).toBeLessThan(2e-3);
      // Not trivially equal: the mask has both foreground and background.
      expect(Math.max(...outB.subarray(500 * 1024, 501 * 1024))).toBeGreaterThan(0.9);
      expect(outB[0]).toBeLessThan(0.1);

      // segment() fills the tensor and makes the 8-bit mask on the model's thread: the mask
      // that runTensor() and toMask give here, and the picture's pixels are moved there.
      const [mask] = await b.segment([{ ...modelInput, data: modelInput.data.slice() }]);
      expect([mask.width, mask.height, mask.channels]).toEqual([1024, 1024, 1]);
      expect(Buffer.from(mask.data).equals(Buffer.from(toMask(outB, 1024).data))).toBe(true);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });
});
