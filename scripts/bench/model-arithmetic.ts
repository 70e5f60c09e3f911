import { readFile } from 'node:fs/promises';
import { readOnnxModel, type OnnxGraph, type OnnxNode } from './onnx-protobuf.js';
import type { ModelArithmeticResult } from './results.js';

/** The arithmetic of one convolution. */
export interface ConvolutionCost {
  name: string;
  opType: 'Conv' | 'ConvTranspose';
  /** The tensor the node writes. */
  outputName: string;
  /** The first segment of the node name (`stage1`, `stage4d`, `side1`, …). */
  block: string;
  input: number[];
  output: number[];
  /** Weight dims: [out_c, in_c/group, kh, kw] for Conv, [in_c, out_c/group, kh, kw] for ConvTranspose. */
  weight: number[];
  /** Multiply-accumulates of one pass. */
  macs: number;
  /** The output's spatial size from the Conv formula and the input shape, for a consistency check (empty without an input shape). */
  expectedSpatial: number[];
}

/** Resolves a tensor name to its dimensions, from whichever source the caller trusts. */
export type ShapeOf = (name: string) => number[] | undefined;

/** Shapes the exporter recorded in the file: graph inputs, outputs and value_info. */
export function recordedShapes(graph: OnnxGraph): ShapeOf {
  const all = new Map<string, number[]>();
  for (const info of [...graph.inputs, ...graph.outputs, ...graph.valueInfo.values()]) all.set(info.name, info.dims);
  return (name) => all.get(name);
}

const product = (values: number[]) => values.reduce((a, b) => a * b, 1);

function expectedSpatial(node: OnnxNode, input: number[], kernel: number[]): number[] {
  const spatial = input.slice(2);
  const ints = (name: string, fallback: number) => node.attributes.get(name)?.ints ?? spatial.map(() => fallback);
  const strides = ints('strides', 1);
  const dilations = ints('dilations', 1);
  const pads = node.attributes.get('pads')?.ints ?? spatial.flatMap(() => [0, 0]);
  const autoPad = node.attributes.get('auto_pad')?.s ?? 'NOTSET';
  return spatial.map((size, i) => {
    if (node.opType === 'ConvTranspose') {
      const outputPadding = node.attributes.get('output_padding')?.ints[i] ?? 0;
      return strides[i] * (size - 1) + outputPadding + ((kernel[i] - 1) * dilations[i] + 1) - pads[i] - pads[i + spatial.length];
    }
    if (autoPad === 'SAME_UPPER' || autoPad === 'SAME_LOWER') return Math.ceil(size / strides[i]);
    const padding = autoPad === 'VALID' ? 0 : pads[i] + pads[i + spatial.length];
    return Math.floor((size + padding - dilations[i] * (kernel[i] - 1) - 1) / strides[i]) + 1;
  });
}

/**
 * Multiply-accumulates of every Conv and ConvTranspose in the graph, from the weights'
 * dims and the tensors' shapes given by `shapeOf`:
 * Conv: out_h·out_w·out_c·(in_c/group)·kh·kw; ConvTranspose: in_h·in_w·in_c·(out_c/group)·kh·kw.
 * Throws if a shape is missing, so a total is never silently short.
 *
 * @example const total = countConvolutions(graph, recordedShapes(graph)).reduce((sum, c) => sum + c.macs, 0)
 */
export function countConvolutions(graph: OnnxGraph, shapeOf: ShapeOf): ConvolutionCost[] {
  return graph.nodes
    .filter((node) => node.opType === 'Conv' || node.opType === 'ConvTranspose')
    .map((node) => {
      const input = shapeOf(node.inputs[0]);
      const output = shapeOf(node.outputs[0]);
      const weight = graph.initializers.get(node.inputs[1])?.dims ?? shapeOf(node.inputs[1]);
      const opType = node.opType as ConvolutionCost['opType'];
      // A Conv's count needs its output and weights; a ConvTranspose's its input and weights.
      const needed = opType === 'Conv' ? output : input;
      if (!needed || !output || !weight || [...needed, ...output].some((d) => d < 0)) {
        throw new Error(`no complete shape for ${node.opType} ${node.name} (input ${input}, output ${output}, weight ${weight})`);
      }
      const batch = output[0];
      const macs = opType === 'Conv' ? batch * product(output.slice(1)) * product(weight.slice(1)) : batch * product(needed.slice(2)) * product(weight);
      const block = node.name.split('/').filter(Boolean)[0] ?? node.name;
      const expected = input && input.every((d) => d >= 0) ? expectedSpatial(node, input, weight.slice(2)) : [];
      return { name: node.name, opType, outputName: node.outputs[0], block, input: input ?? [], output, weight, macs, expectedSpatial: expected };
    });
}

/** Multiply-accumulates per block, in graph order. */
export function macsByBlock(costs: ConvolutionCost[]): { block: string; convolutions: number; macs: number }[] {
  const blocks = new Map<string, { block: string; convolutions: number; macs: number }>();
  for (const cost of costs) {
    const entry = blocks.get(cost.block) ?? { block: cost.block, convolutions: 0, macs: 0 };
    entry.convolutions++;
    entry.macs += cost.macs;
    blocks.set(cost.block, entry);
  }
  return [...blocks.values()];
}

/** Runs the model once and returns the shapes of the named tensors as the runtime computed them. */
export type FetchShapes = (modelBytes: Uint8Array, names: string[], inputShape: number[]) => Promise<Map<string, number[]>>;

/**
 * The arithmetic of one pass of an ONNX model. Shapes come from running it: every tensor
 * a convolution reads or writes is fetched once as an extra graph output, so the count holds
 * for any export, with or without recorded shapes. Where the file does record shapes
 * (value_info), they are counted too and compared; each output is also checked against the
 * Conv formula applied to its input.
 */
export async function measureModelArithmetic(modelPath: string, fetchShapes: FetchShapes): Promise<Omit<ModelArithmeticResult, 'path'>> {
  const bytes = await readFile(modelPath);
  const { graph } = readOnnxModel(bytes);
  const input = graph.inputs[0];
  const convs = graph.nodes.filter((node) => node.opType === 'Conv' || node.opType === 'ConvTranspose');
  const graphInputs = new Set(graph.inputs.map((i) => i.name));
  const wanted = [...new Set(convs.flatMap((node) => [node.inputs[0], node.outputs[0]]))].filter((name) => !graphInputs.has(name) && !graph.initializers.has(name));
  const measured = await fetchShapes(bytes, wanted, input.dims);
  const fromFile = recordedShapes(graph);
  const runtime = countConvolutions(graph, (name) => measured.get(name) ?? (graphInputs.has(name) ? fromFile(name) : undefined));

  let recordedMacs: number | undefined;
  const recordedMismatches: string[] = [];
  try {
    const recorded = countConvolutions(graph, fromFile);
    recordedMacs = recorded.reduce((sum, c) => sum + c.macs, 0);
    recorded.forEach((c, i) => c.output.join('×') !== runtime[i].output.join('×') && recordedMismatches.push(c.name));
  } catch {
    // the file records no (or not every) intermediate shape: nothing to compare
  }
  const macs = runtime.reduce((sum, c) => sum + c.macs, 0);
  return {
    convolutions: runtime.filter((c) => c.opType === 'Conv').length,
    convTransposes: runtime.filter((c) => c.opType === 'ConvTranspose').length,
    macs,
    byBlock: macsByBlock(runtime),
    shapeCheck: {
      runtimeMacs: macs,
      recordedMacs,
      formulaMismatches: runtime.filter((c) => c.expectedSpatial.length === 0 || c.expectedSpatial.join('×') !== c.output.slice(2).join('×')).map((c) => c.name),
      recordedMismatches,
    },
  };
}
