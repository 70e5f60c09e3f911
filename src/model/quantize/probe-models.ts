/**
 * Two one-convolution models, float32 and int8, for timing on the machine at hand whether
 * int8 convolutions are faster here than float32 ones (CUTOUT_MODEL_PRECISION=auto). CPUs
 * with VNNI or AMX multiply uint8 by int8 several times faster than floats; one without may
 * gain little or nothing. The convolution has the shape of IS-Net's heavy layers (3×3, 64
 * channels in and out); the int8 model is made by the same rewrite as the real one
 * (qdq-model.ts), so the probe times the kernels the real model would get.
 */

import * as onnx from '../onnx-fields.js';
import { lengthDelimitedField, stringField, varintField } from '../onnx-wire.js';
import { intAttribute, tensorOf, writeModel, type EditableModel } from './onnx-graph.js';
import { quantizeModel } from './qdq-model.js';

/** The probe's input side and channel count. */
export const PROBE_SIZE = 256;
export const PROBE_CHANNELS = 64;

/** A float32 ValueInfoProto of shape [1, channels, size, size]. */
function valueInfo(number: number, name: string): Uint8Array {
  const dims = [1, PROBE_CHANNELS, PROBE_SIZE, PROBE_SIZE].map((d) => lengthDelimitedField(onnx.TENSOR_DIMS, varintField(1, d)));
  const tensorType = Buffer.concat([varintField(onnx.TENSOR_TYPE_ELEM_TYPE, onnx.FLOAT), lengthDelimitedField(2, Buffer.concat(dims))]);
  return lengthDelimitedField(number, Buffer.concat([stringField(onnx.VALUE_INFO_NAME, name), lengthDelimitedField(onnx.VALUE_INFO_TYPE, lengthDelimitedField(onnx.TYPE_TENSOR, tensorType))]));
}

/** Values in [−amplitude, amplitude) from a fixed seed: the same probe on every machine. */
function seeded(length: number, amplitude: number, seed: number): Float32Array {
  const values = new Float32Array(length);
  let state = seed >>> 0;
  for (let i = 0; i < length; i++) {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    values[i] = (state / 2 ** 32 - 0.5) * 2 * amplitude;
  }
  return values;
}

/** The probe's input: seeded values in [−1, 1). */
export function probeInput(): Float32Array {
  return seeded(PROBE_CHANNELS * PROBE_SIZE * PROBE_SIZE, 1, 7);
}

/**
 * The float32 model x → Conv 3×3 → Relu → Sigmoid → y and its int8 rewrite (the Sigmoid
 * keeps the Relu's output off the graph's outputs, where the runtime would not fuse it).
 */
export function probeModels(): { fp32: Uint8Array; int8: Uint8Array } {
  const c = PROBE_CHANNELS;
  const model: EditableModel = {
    nodes: [
      { opType: 'Conv', name: 'conv', inputs: ['x', 'w', 'b'], outputs: ['conv'], rest: [intAttribute('group', 1)] },
      { opType: 'Relu', name: 'relu', inputs: ['conv'], outputs: ['relu'], rest: [] },
      { opType: 'Sigmoid', name: 'sigmoid', inputs: ['relu'], outputs: ['y'], rest: [] },
    ],
    initializers: new Map(),
    inputs: ['x'],
    outputs: ['y'],
    graphFields: [stringField(2, 'precision-probe'), valueInfo(onnx.GRAPH_INPUT, 'x'), valueInfo(onnx.GRAPH_OUTPUT, 'y')],
    modelFields: [varintField(1, 8), lengthDelimitedField(onnx.MODEL_OPSET_IMPORT, varintField(onnx.OPSET_VERSION, 15))],
  };
  // "same" padding: attribute pads [1, 1, 1, 1] as a packed INTS attribute.
  model.nodes[0].rest.push(
    lengthDelimitedField(onnx.NODE_ATTRIBUTE, Buffer.concat([stringField(onnx.ATTRIBUTE_NAME, 'pads'), lengthDelimitedField(onnx.ATTRIBUTE_INTS, Uint8Array.of(1, 1, 1, 1)), varintField(onnx.ATTRIBUTE_TYPE, onnx.ATTRIBUTE_TYPE_INTS)])),
  );
  const weights = [tensorOf('w', onnx.FLOAT, [c, c, 3, 3], seeded(c * c * 9, 0.05, 1)), tensorOf('b', onnx.FLOAT, [c], seeded(c, 0.1, 2))];
  const fp32 = writeModel(model, model.nodes, weights);
  const { model: int8 } = quantizeModel(fp32, { model: 'precision-probe', rule: 'fixed', photos: 0, floatConvs: [], ranges: { x: [-1, 1], relu: [0, 2] } });
  return { fp32, int8 };
}
