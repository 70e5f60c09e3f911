/**
 * The bundled IS-Net made to run at a smaller side than its 1024, for tests on a provider
 * too slow for the full size (WebGPU on lavapipe, software Vulkan: a 1024² pass takes a
 * minute there). IS-Net is convolutional throughout; only its graph's declared input and
 * output and the target sizes of its Resize nodes (constants: 1024, 512, …, 32) name the
 * side. Those are scaled by side / 1024, which must keep each one whole (160 and 320 do).
 * The weights stay the package's float16 ones, as WebGPU runs the bundled model; the mask
 * is the only output.
 */

import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { assembleModel, MASK_OUTPUT } from '../../src/model/assemble-model.js';
import { keepOnlyOutput } from '../../src/model/mask-output-only.js';
import * as onnx from '../../src/model/onnx-fields.js';
import { lengthDelimitedField, payloadOf, readFields } from '../../src/model/onnx-wire.js';
import { floatValueInfo, openModel, writeModel, type EditableModel } from '../../src/model/quantize/onnx-graph.js';

const ISNET_SIDE = 1024;
/** AttributeProto.t and TensorProto's fields this rewrite reads (onnx.proto). */
const ATTRIBUTE_TENSOR = 5;

/** A Constant node's tensor attribute with its int64 values scaled by `side / 1024`. */
function scaledConstant(attribute: Uint8Array, side: number): Uint8Array {
  const [field] = readFields(attribute);
  const parts = readFields(payloadOf(field));
  const tensorField = parts.find((part) => part.number === ATTRIBUTE_TENSOR);
  if (!tensorField) throw new Error('a Resize size that is not a tensor constant');
  const tensor = readFields(payloadOf(tensorField));
  const raw = tensor.find((part) => part.number === onnx.TENSOR_RAW_DATA);
  if (!raw || Number(tensor.find((part) => part.number === onnx.TENSOR_DATA_TYPE)?.value) !== onnx.INT64) throw new Error('a Resize size that is not int64 raw data');
  const values = new BigInt64Array(Uint8Array.from(payloadOf(raw)).buffer);
  const scaled = values.map((value) => {
    if ((value * BigInt(side)) % BigInt(ISNET_SIDE) !== 0n) throw new Error(`side ${side} does not scale IS-Net's size ${value} to a whole one`);
    return (value * BigInt(side)) / BigInt(ISNET_SIDE);
  });
  const newTensor = Buffer.concat([...tensor.filter((part) => part !== raw).map((part) => part.bytes), lengthDelimitedField(onnx.TENSOR_RAW_DATA, new Uint8Array(scaled.buffer))]);
  return lengthDelimitedField(field.number, Buffer.concat([...parts.filter((part) => part !== tensorField).map((part) => part.bytes), lengthDelimitedField(ATTRIBUTE_TENSOR, newTensor)]));
}

/**
 * Makes the opened IS-Net graph work at `side` instead of 1024: scales the target sizes of its
 * Resize nodes by `side / 1024`. Its declared input and output, which name the side too, are
 * the caller's to declare.
 */
export function scaleIsnetResizes(model: EditableModel, side: number): void {
  const producer = new Map(model.nodes.flatMap((node) => node.outputs.map((output) => [output, node] as const)));
  // Each Resize's sizes are Concat(the first two dims of Shape(x), a Constant of the two spatial ones).
  for (const resize of model.nodes.filter((node) => node.opType === 'Resize')) {
    const concat = producer.get(resize.inputs[3]);
    const constant = concat && producer.get(concat.inputs[1]);
    if (constant?.opType !== 'Constant') throw new Error(`${resize.name}: its sizes are not Concat(…, Constant)`);
    constant.rest = constant.rest.map((bytes) => (readFields(bytes)[0].number === onnx.NODE_ATTRIBUTE ? scaledConstant(bytes, side) : bytes));
  }
}

/**
 * Writes `<dir>/isnet-<side>-fp16.onnx` (once) and returns its path: the bundled model taking
 * a `[1, 3, side, side]` input and giving its `[1, 1, side, side]` mask.
 *
 * @example const path = await isnetAtSize(tmpdir(), 160) // serve it as an installed model with --input-size 160
 */
export async function isnetAtSize(dir: string, side: number): Promise<string> {
  const target = join(dir, `isnet-${side}-fp16.onnx`);
  if (existsSync(target)) return target;
  const shipped = await assembleModel(dir, { rewrite: false });
  const model = openModel(keepOnlyOutput(await readFile(shipped), MASK_OUTPUT).model);
  scaleIsnetResizes(model, side);
  model.graphFields = model.graphFields.filter((bytes) => ![onnx.GRAPH_INPUT, onnx.GRAPH_OUTPUT].includes(readFields(bytes)[0].number));
  model.graphFields.push(floatValueInfo(onnx.GRAPH_INPUT, model.inputs[0], [1, 3, side, side]), floatValueInfo(onnx.GRAPH_OUTPUT, MASK_OUTPUT, [1, 1, side, side]));
  const partial = `${target}.${randomBytes(6).toString('hex')}.partial`;
  await writeFile(partial, writeModel(model, model.nodes, model.initializers.values()));
  await rename(partial, target);
  return target;
}
