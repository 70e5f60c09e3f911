/**
 * The int8 model, built from the float32 one at start the first time (and again whenever the
 * calibration file or the rewrite changes), into `<dataDir>/models/` beside the others. For
 * the bundled model the calibration file ships in the package (isnet-int8-ranges.json); for
 * a custom CUTOUT_MODEL_PATH it is `<model>.int8-ranges.json` beside the model, written by
 * `npm run quantize -- --model <model>`; without one there is no int8 model.
 */

import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, stat } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { writeAtomically } from './assemble-model.js';
import bundled from './isnet-int8-ranges.json' with { type: 'json' };
import { parseInt8Ranges, readInt8Ranges, type Int8Ranges } from './quantize/int8-ranges.js';
import { quantizeModel } from './quantize/qdq-model.js';

/**
 * Changes whenever quantizeModel's output for the same input changes, so that an int8 model
 * made by an older rewrite is never loaded: a new one is built beside it under a new name (the
 * old file stays until removed; servers of the older version may share the data directory).
 */
const REWRITE_VERSION = 'qdq-4';

/** The calibration file of the bundled model. */
export const BUNDLED_RANGES: Int8Ranges = parseInt8Ranges(bundled, 'src/model/isnet-int8-ranges.json');

/** Where a custom model's calibration file is looked for: beside it, `<name>.int8-ranges.json`. */
export function rangesPathFor(modelPath: string): string {
  return `${modelPath.replace(/\.onnx$/i, '')}.int8-ranges.json`;
}

/**
 * The calibration file for a model: the bundled one's when `custom` is false, else the one
 * beside the model, or undefined when there is none.
 */
export async function rangesFor(modelPath: string, custom: boolean): Promise<Int8Ranges | undefined> {
  if (!custom) return BUNDLED_RANGES;
  const path = rangesPathFor(modelPath);
  return existsSync(path) ? readInt8Ranges(path) : undefined;
}

/**
 * Returns the path of the int8 model made from the float32 model at `fp32Path` with
 * `ranges`, building it first if `<dataDir>/models/` does not hold it yet.
 *
 * @example const int8Path = await buildInt8Model(fp32Path, BUNDLED_RANGES, './data')
 */
export async function buildInt8Model(fp32Path: string, ranges: Int8Ranges, dataDir: string): Promise<string> {
  const hash = createHash('sha256').update(REWRITE_VERSION).update(JSON.stringify(ranges)).digest('hex').slice(0, 8);
  const target = join(dataDir, 'models', `${basename(fp32Path).replace(/\.onnx$/i, '')}-int8-${hash}.onnx`);
  if (await stat(target).catch(() => undefined)) return target;
  const { model } = quantizeModel(await readFile(fp32Path), ranges);
  await mkdir(join(dataDir, 'models'), { recursive: true });
  await writeAtomically(target, model);
  return target;
}
