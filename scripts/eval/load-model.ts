import { availableParallelism } from 'node:os';
import { assembleModel } from '../../src/model/assemble-model.js';
import { buildInt8Model, rangesFor, rangesPathFor } from '../../src/model/int8-model.js';
import { loadSegmenter, type OnnxSegmenter } from '../../src/model/onnx-segmenter.js';

export type Precision = 'fp32' | 'int8';

/** The model an evaluation script runs, loaded and warmed. */
export interface LoadedModel {
  model: OnnxSegmenter;
  modelPath: string;
  threads: number;
}

/**
 * The model of CUTOUT_MODEL_PATH, or the bundled one assembled into CUTOUT_DATA_DIR (./data),
 * in `precision` (int8 built from the float32 model and its calibration file), on every core,
 * after one warm-up pass so that the first image's time is like the others'. Rejects with a
 * message to print when int8 is asked for and there is no calibration file.
 *
 * @example const { model } = await loadEvalModel('int8')
 */
export async function loadEvalModel(precision: Precision): Promise<LoadedModel> {
  const dataDir = process.env.CUTOUT_DATA_DIR ?? './data';
  const fp32Path = process.env.CUTOUT_MODEL_PATH ?? (await assembleModel(dataDir));
  const ranges = precision === 'int8' ? await rangesFor(fp32Path, process.env.CUTOUT_MODEL_PATH !== undefined) : undefined;
  if (precision === 'int8' && !ranges) throw new Error(`--precision int8: no calibration file ${rangesPathFor(fp32Path)}; npm run quantize -- --model ${fp32Path} makes one`);
  const modelPath = ranges ? await buildInt8Model(fp32Path, ranges, dataDir) : fp32Path;
  const threads = availableParallelism();
  const model = await loadSegmenter(modelPath, { threads });
  await model.runTensor(new Float32Array(3 * model.size ** 2));
  return { model, modelPath, threads };
}
