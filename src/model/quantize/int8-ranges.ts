/**
 * The calibration file the int8 model is built from: each activation's float range,
 * measured by running the float32 model over photos (scripts/quantize.ts writes it), and the
 * convolutions that stay in float32 because int8 cost them too much. The bundled model's is
 * src/model/isnet-int8-ranges.json; a custom model's sits beside it (see docs/models.md, "Precision: int8 or float32").
 */

import { readFile } from 'node:fs/promises';

/** The parsed calibration file. */
export interface Int8Ranges {
  /** File name of the float32 model the ranges were measured on, for the reader's benefit. */
  model: string;
  /** How each range was taken from the photos' values (a sentence, for the record). */
  rule: string;
  /** How many photos were run. */
  photos: number;
  /** Names of Conv nodes kept in float32 (mixed precision). */
  floatConvs: string[];
  /** Tensor name → [min, max] of its values. */
  ranges: Record<string, [number, number]>;
}

/** Checks the shape of a parsed calibration file; throws naming `source` and what is wrong. */
export function parseInt8Ranges(json: unknown, source: string): Int8Ranges {
  const fail = (what: string): never => {
    throw new Error(`${source} is not a calibration file: ${what}`);
  };
  if (typeof json !== 'object' || json === null) fail('not a JSON object');
  const file = json as Record<string, unknown>;
  if (typeof file.model !== 'string' || typeof file.rule !== 'string' || typeof file.photos !== 'number') fail('model, rule or photos missing');
  if (!Array.isArray(file.floatConvs) || !file.floatConvs.every((name) => typeof name === 'string')) fail('floatConvs is not a list of node names');
  if (typeof file.ranges !== 'object' || file.ranges === null) fail('ranges missing');
  for (const [name, range] of Object.entries(file.ranges as object)) {
    const valid = Array.isArray(range) && range.length === 2 && range.every(Number.isFinite) && range[0] <= range[1];
    if (!valid) fail(`the range of ${name} is not [min, max]`);
  }
  return file as unknown as Int8Ranges;
}

/** Reads and checks a calibration file. */
export async function readInt8Ranges(path: string): Promise<Int8Ranges> {
  let json: unknown;
  try {
    json = JSON.parse(await readFile(path, 'utf8'));
  } catch (error) {
    throw new Error(`cannot read the calibration file ${path}`, { cause: error });
  }
  return parseInt8Ranges(json, path);
}
