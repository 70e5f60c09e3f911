/**
 * Models with another family's inputs and outputs, built from the bundled IS-Net, for tests
 * of Cutout's per-model processing: no other model can be installed on a test machine, but
 * IS-Net wrapped so that it takes and gives what BiRefNet or U²-Net take and give must come
 * back with IS-Net's own cut when Cutout handles it as that family.
 */

import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { assembleModel } from '../../src/model/assemble-model.js';
import { IMAGENET } from '../../src/model/model-processing.js';
import * as onnx from '../../src/model/onnx-fields.js';
import { readFields } from '../../src/model/onnx-wire.js';
import { floatValueInfo, openModel, tensorOf, writeModel, type GraphNode, type GraphTensor } from '../../src/model/quantize/onnx-graph.js';
import { scaleIsnetResizes } from './isnet-at-size.js';

const ISNET_SIZE = 1024;

function node(opType: string, inputs: string[], outputs: string[], rest: Uint8Array[] = []): GraphNode {
  return { opType, name: `wrap_${outputs[0]}`, inputs, outputs, rest };
}

const floats = (name: string, dims: number[], values: number[]) => tensorOf(name, onnx.FLOAT, dims, Float32Array.from(values));

/**
 * Nodes that turn a tensor normalised as (x / 255 − mean) / std into IS-Net's x / 256 − 0.5:
 * x / 256 − 0.5 = t · std · 255/256 + mean · 255/256 − 0.5, per channel.
 */
function fromImagenet(input: string, output: string): { nodes: GraphNode[]; tensors: GraphTensor[] } {
  const a = IMAGENET.std.map((s) => (s * 255) / 256);
  const b = IMAGENET.mean.map((m) => (m * 255) / 256 - 0.5);
  return {
    nodes: [node('Mul', [input, 'wrap_a'], ['wrap_scaled']), node('Add', ['wrap_scaled', 'wrap_b'], [output])],
    tensors: [floats('wrap_a', [1, 3, 1, 1], a), floats('wrap_b', [1, 3, 1, 1], b)],
  };
}

/** The bundled model, float32 with the mask as its only output (`input` → `output`), opened for rewriting. */
async function openIsnet(dataDir: string) {
  const model = openModel(await readFile(await assembleModel(dataDir)));
  if (model.inputs[0] !== 'input' || model.outputs[0] !== 'output') throw new Error(`unexpected IS-Net graph: ${model.inputs} → ${model.outputs}`);
  // The graph's own input and output are replaced by the wrapper's.
  model.graphFields = model.graphFields.filter((bytes) => {
    const [field] = readFields(bytes);
    return field.number !== onnx.GRAPH_INPUT && field.number !== onnx.GRAPH_OUTPUT;
  });
  const rename = (name: string) => (name === 'input' ? 'isnet_input' : name === 'output' ? 'isnet_probability' : name);
  for (const n of model.nodes) {
    n.inputs = n.inputs.map(rename);
    n.outputs = n.outputs.map(rename);
  }
  return model;
}

/**
 * IS-Net as BiRefNet's ONNX files look from outside: a `[1, 3, 1024, 1024]` input normalised
 * with ImageNet's mean and deviation, and logits as output 0 (a logit node after IS-Net's
 * probability). Written to `<dataDir>/birefnet-shaped.onnx`; returns its path.
 */
export async function buildBirefnetShaped(dataDir: string): Promise<string> {
  const model = await openIsnet(dataDir);
  const input = fromImagenet('pixel_values', 'isnet_input');
  // logit(p) = log(p / (1 − p)), p kept off 0 and 1 so that the logit stays finite.
  const logit = [
    node('Clip', ['isnet_probability', 'wrap_low', 'wrap_high'], ['wrap_p']),
    node('Sub', ['wrap_one', 'wrap_p'], ['wrap_q']),
    node('Div', ['wrap_p', 'wrap_q'], ['wrap_odds']),
    node('Log', ['wrap_odds'], ['logits']),
  ];
  const constants = [floats('wrap_low', [], [1e-6]), floats('wrap_high', [], [1 - 1e-6]), floats('wrap_one', [], [1])];
  model.graphFields.push(floatValueInfo(onnx.GRAPH_INPUT, 'pixel_values', [1, 3, ISNET_SIZE, ISNET_SIZE]), floatValueInfo(onnx.GRAPH_OUTPUT, 'logits', [1, 1, ISNET_SIZE, ISNET_SIZE]));
  const bytes = writeModel(model, [...input.nodes, ...model.nodes, ...logit], [...input.tensors, ...model.initializers.values(), ...constants]);
  const path = join(dataDir, 'birefnet-shaped.onnx');
  await writeFile(path, bytes);
  return path;
}

/**
 * IS-Net as U²-Net's ONNX files look from outside: a `[1, 3, 320, 320]` ImageNet-normalised
 * input and seven `[1, 1, 320, 320]` outputs, the mask (probabilities) first. The others are
 * its inverse, so a server that read any output but the first would cut the background out.
 * Inside, IS-Net works at 320 itself (the target sizes of its Resize nodes scaled, as
 * isnet-at-size.ts does), a tenth of a 1024² pass.
 */
export async function buildU2netShaped(dataDir: string, size = 320): Promise<string> {
  const model = await openIsnet(dataDir);
  scaleIsnetResizes(model, size);
  const input = fromImagenet('input.1', 'isnet_input');
  const mask = node('Identity', ['isnet_probability'], ['d0']);
  const sides = Array.from({ length: 6 }, (_, i) => node('Sub', ['wrap_one', 'd0'], [`side${i + 1}`]));
  model.graphFields.push(
    floatValueInfo(onnx.GRAPH_INPUT, 'input.1', [1, 3, size, size]),
    ...['d0', ...sides.map((side) => side.outputs[0])].map((name) => floatValueInfo(onnx.GRAPH_OUTPUT, name, [1, 1, size, size])),
  );
  const bytes = writeModel(model, [...input.nodes, ...model.nodes, mask, ...sides], [...input.tensors, ...model.initializers.values(), floats('wrap_one', [], [1])]);
  const path = join(dataDir, 'u2net-shaped.onnx');
  await writeFile(path, bytes);
  return path;
}
