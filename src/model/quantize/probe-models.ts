/**
 * Two small models, float32 and int8, for timing on the machine at hand whether int8
 * convolutions are faster here than float32 ones (CUTOUT_MODEL_PRECISION=auto). CPUs with
 * VNNI or AMX multiply uint8 by int8 several times faster than floats; one without may gain
 * little or nothing. The model is a chain of convolutions of the shape of IS-Net's heavy
 * layers (3×3, 64 channels in and out, each with its Relu), long enough that the conversions
 * at its ends do not hide them; the int8 model is made by the same rewrite as the real one
 * (qdq-model.ts), so the probe times the kernels the real model would get.
 */

import * as onnx from '../onnx-fields.js';
import { lengthDelimitedField, stringField, varintField } from '../onnx-wire.js';
import { floatValueInfo, intAttribute, intsAttribute, tensorOf, writeModel, type EditableModel } from './onnx-graph.js';
import { quantizeModel } from './qdq-model.js';

/** The probe's input side and channel count. */
export const PROBE_SIZE = 128;
export const PROBE_CHANNELS = 64;
const LAYERS = 4;

/** Values in [−amplitude, amplitude) from a fixed seed: the same probe on every machine. */
export function seeded(length: number, amplitude: number, seed: number): Float32Array {
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

/** "same" padding for a 3×3 convolution. */
const SAME_PADDING = intsAttribute('pads', [1, 1, 1, 1]);

/**
 * The float32 model x → (Conv 3×3 → Relu) × 4 → Sigmoid → y and its int8 rewrite (the Sigmoid
 * keeps the last Relu's output off the graph's outputs, where the runtime would not fuse it).
 * Weights are seeded at a scale that keeps the activations' spread from layer to layer.
 */
export function probeModels(): { fp32: Uint8Array; int8: Uint8Array } {
  const c = PROBE_CHANNELS;
  const shape = [1, c, PROBE_SIZE, PROBE_SIZE];
  const nodes: EditableModel['nodes'] = [];
  const weights = [];
  const ranges: Record<string, [number, number]> = { x: [-1, 1] };
  for (let layer = 0; layer < LAYERS; layer++) {
    const input = layer === 0 ? 'x' : `relu${layer - 1}`;
    nodes.push(
      { opType: 'Conv', name: `conv${layer}`, inputs: [input, `w${layer}`, `b${layer}`], outputs: [`conv${layer}`], rest: [intAttribute('group', 1), SAME_PADDING] },
      { opType: 'Relu', name: `relu${layer}`, inputs: [`conv${layer}`], outputs: [`relu${layer}`], rest: [] },
    );
    weights.push(tensorOf(`w${layer}`, onnx.FLOAT, [c, c, 3, 3], seeded(c * c * 9, 0.1, 2 * layer + 1)), tensorOf(`b${layer}`, onnx.FLOAT, [c], seeded(c, 0.1, 2 * layer + 2)));
    ranges[`relu${layer}`] = [0, 3];
  }
  nodes.push({ opType: 'Sigmoid', name: 'sigmoid', inputs: [`relu${LAYERS - 1}`], outputs: ['y'], rest: [] });
  const model: EditableModel = {
    nodes,
    initializers: new Map(),
    inputs: ['x'],
    outputs: ['y'],
    graphFields: [stringField(2, 'precision-probe'), floatValueInfo(onnx.GRAPH_INPUT, 'x', shape), floatValueInfo(onnx.GRAPH_OUTPUT, 'y', shape)],
    modelFields: [varintField(1, 8), lengthDelimitedField(onnx.MODEL_OPSET_IMPORT, varintField(onnx.OPSET_VERSION, 15))],
  };
  const fp32 = writeModel(model, model.nodes, weights);
  const { model: int8 } = quantizeModel(fp32, { model: 'precision-probe', rule: 'fixed', photos: 0, floatConvs: [], ranges });
  // Plain Uint8Arrays: ONNX Runtime's argument check does not take every Buffer for one.
  return { fp32: new Uint8Array(fp32), int8: new Uint8Array(int8) };
}
