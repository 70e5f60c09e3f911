import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { assembleModel } from '../../src/model/assemble-model.js';
import { BUNDLED_RANGES, buildInt8Model } from '../../src/model/int8-model.js';

/**
 * The model files the tests run, made once into one directory that every test process and
 * the servers they start share, so that no test pays for assembling or quantizing them.
 */
const MODEL_DIR = join(tmpdir(), 'cutout-test-model');

/** The bundled float32 model, assembled as a server assembles it at first start. */
export function fp32ModelPath(): Promise<string> {
  return assembleModel(MODEL_DIR);
}

/**
 * The int8 model, built from the float32 one with the committed ranges
 * (src/model/isnet-int8-ranges.json) as a server that chose int8 builds it: the model most
 * servers run (every CPU with VNNI or AMX), so it is the one the end-to-end tests run.
 */
export async function int8ModelPath(): Promise<string> {
  return buildInt8Model(await fp32ModelPath(), BUNDLED_RANGES, MODEL_DIR);
}
