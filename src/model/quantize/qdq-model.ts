/**
 * Rewrites a float32 IS-Net-family model into its statically quantized form, in the QDQ
 * layout: every activation that an int8 kernel reads is followed by a QuantizeLinear (to
 * uint8) and read through a DequantizeLinear, each convolution's weights are stored as
 * per-channel int8 (and its bias as int32) behind a DequantizeLinear. The graph stays a
 * float graph to the letter; ONNX Runtime, when it loads it, recognises each
 * DequantizeLinear → op → QuantizeLinear group and runs the op on the integers
 * (QLinearConv, QLinearConcat, QLinearAdd, uint8 MaxPool). Which groups it recognises is
 * what shapes the choices below:
 *
 * - The QuantizeLinear goes after a convolution's Relu, not between them: with a zero point
 *   of 0 the Relu is redundant, and the runtime folds it into the convolution.
 * - MaxPool and Resize outputs take their input's parameters: the runtime drops a Q/DQ pair
 *   around an op that does not change values only when both sides match, and otherwise runs
 *   the op in float between layout transposes.
 * - A Concat's inputs take its output's parameters (`shareConcatScales`), so that
 *   QLinearConcat copies bytes instead of requantizing each input.
 * - Each reader of a quantized tensor gets a DequantizeLinear of its own and none is left
 *   without a reader: a stray one costs a layout transpose. Shape reads the uint8 tensor.
 * - The last Resize and the Sigmoid stay in float: the mask is made from float logits.
 * - A convolution with a single output channel (the side output that makes the mask's
 *   logits) gets fifteen more channels of zero weights, and channel 0 is taken back with a
 *   Gather on the uint8 tensor: the runtime's int8 convolution is slow for one output
 *   channel and fast for sixteen, and the values are the same.
 * - A convolution that only feeds another, with no activation between (IS-Net's first one),
 *   is first folded into it (fold-convs.ts): one int8 convolution that reads the photo, where
 *   a float32 one at 512² and its conversion into the int8 layout cost more. That one, a
 *   strided convolution on three channels, then reads the photo regrouped by SpaceToDepth
 *   as a stride-1 convolution on twelve (space-to-depth.ts), which the int8 kernel runs faster.
 *
 * Ranges come from a calibration file (int8-ranges.ts); convolutions it lists as float stay
 * float32, reading a dequantized input, and are never folded.
 */

import * as onnx from '../onnx-fields.js';
import { foldConvChains } from './fold-convs.js';
import type { Int8Ranges } from './int8-ranges.js';
import { floatValues, intAttribute, openModel, tensorOf, writeModel, type GraphNode, type GraphTensor } from './onnx-graph.js';
import { dataInputs, planQuantization, type QdqOptions } from './qdq-plan.js';
import { quantizeBias, quantizeWeights, uint8Params, type Uint8Params } from './quantization-params.js';
import { spaceToDepthInputs } from './space-to-depth.js';

/** The output channels a one-channel convolution is padded to (see the module's comment). */
const NARROW_PADDED_TO = 16;

export interface QdqModel {
  model: Buffer;
  /** Convolutions now on int8 weights. */
  quantizedConvs: number;
  /** Convolutions kept in float32. */
  floatConvs: number;
  /** Convolutions folded into the one that reads them. */
  foldedConvs: number;
  /** Strided convolutions on the photo that now read it regrouped by SpaceToDepth. */
  regroupedConvs: number;
}

/**
 * Quantizes `fp32Model` (a float32 ONNX file) with the calibration `ranges`. Throws when the
 * graph holds an op on activations that this rewrite does not know, or an activation the
 * calibration file has no range for (a file measured on another model).
 *
 * @example const { model } = quantizeModel(await readFile(fp32Path), await readInt8Ranges(rangesPath))
 */
export function quantizeModel(fp32Model: Uint8Array, ranges: Int8Ranges, options: QdqOptions = {}): QdqModel {
  const model = openModel(fp32Model);
  const foldedConvs = foldConvChains(model, new Set(ranges.floatConvs));
  const { nodes, initializers } = model;
  const { quantized, groups } = planQuantization(model, new Set(ranges.floatConvs), options);
  const isIntegerConv = (node: GraphNode) => node.opType === 'Conv' && !ranges.floatConvs.includes(node.name) && initializers.has(node.inputs[1]);
  const groupRange = new Map<string, [number, number]>();
  for (const name of quantized) {
    const range = ranges.ranges[name];
    if (!range) continue;
    const root = groups.root(name);
    const [low, high] = groupRange.get(root) ?? [Infinity, -Infinity];
    groupRange.set(root, [Math.min(low, range[0]), Math.max(high, range[1])]);
  }

  const added: GraphTensor[] = [];
  const params = new Map<string, { params: Uint8Params; scale: string; zeroPoint: string }>();
  const paramsOf = (name: string) => {
    const root = groups.root(name);
    let found = params.get(root);
    if (!found) {
      const range = groupRange.get(root);
      if (!range) throw new Error(`the calibration file (${ranges.model}) has no range for ${name}: was it measured on this model?`);
      const group = uint8Params(...range);
      found = { params: group, scale: `${root}/scale`, zeroPoint: `${root}/zero_point` };
      added.push(tensorOf(found.scale, onnx.FLOAT, [], Float32Array.of(group.scale)), tensorOf(found.zeroPoint, onnx.UINT8, [], Uint8Array.of(group.zeroPoint)));
      params.set(root, found);
    }
    return found;
  };

  const out: GraphNode[] = [];
  const quantizedName = (name: string) => `${name}/quantized`;
  const quantize = (name: string) => {
    const { scale, zeroPoint } = paramsOf(name);
    out.push({ opType: 'QuantizeLinear', name: `${name}/quantize`, inputs: [name, scale, zeroPoint], outputs: [quantizedName(name)], rest: [] });
  };
  let dequantized = 0;
  const dequantize = (name: string) => {
    const { scale, zeroPoint } = paramsOf(name);
    const output = `${name}/dequantized/${++dequantized}`;
    out.push({ opType: 'DequantizeLinear', name: output, inputs: [quantizedName(name), scale, zeroPoint], outputs: [output], rest: [] });
    return output;
  };
  /**
   * int8 weights and int32 bias of a convolution behind DequantizeLinear nodes, `channels`
   * output channels of them (the ones the model lacks are zeros); returns the new input names.
   */
  const quantizeConvWeights = (node: GraphNode, inputScale: number, channels = initializers.get(node.inputs[1])!.dims[0]): string[] => {
    const weight = initializers.get(node.inputs[1])!;
    const padded = new Float32Array((channels * floatValues(weight).length) / weight.dims[0]);
    padded.set(floatValues(weight));
    const { values, scales } = quantizeWeights(padded, channels);
    const names = [`${weight.name}/int8`, `${weight.name}/scale`, `${weight.name}/zero_point`];
    added.push(tensorOf(names[0], onnx.INT8, [channels, ...weight.dims.slice(1)], values), tensorOf(names[1], onnx.FLOAT, [channels], scales), tensorOf(names[2], onnx.INT8, [channels], new Int8Array(channels)));
    out.push({ opType: 'DequantizeLinear', name: `${weight.name}/dequantize`, inputs: names, outputs: [`${weight.name}/dequantized`], rest: [intAttribute('axis', 0)] });
    const inputs = [`${weight.name}/dequantized`];
    const bias = node.inputs[2] ? initializers.get(node.inputs[2]) : undefined;
    if (bias) {
      const paddedBias = new Float32Array(channels);
      paddedBias.set(floatValues(bias));
      const q = quantizeBias(paddedBias, inputScale, scales);
      const biasNames = [`${bias.name}/int32`, `${bias.name}/scale`, `${bias.name}/zero_point`];
      added.push(tensorOf(biasNames[0], onnx.INT32, [channels], q.values), tensorOf(biasNames[1], onnx.FLOAT, [channels], q.scales), tensorOf(biasNames[2], onnx.INT32, [channels], new Int32Array(channels)));
      out.push({ opType: 'DequantizeLinear', name: `${bias.name}/dequantize`, inputs: biasNames, outputs: [`${bias.name}/dequantized`], rest: [intAttribute('axis', 0)] });
      inputs.push(`${bias.name}/dequantized`);
    }
    return inputs;
  };

  /**
   * A one-channel convolution, its weights already padded: it writes NARROW_PADDED_TO
   * channels, quantized with its output's parameters, and a Gather of channel 0 between a
   * DequantizeLinear and a QuantizeLinear of the same parameters (which the runtime runs on
   * the uint8 values) gives back the output its readers expect.
   */
  const widenAndGather = (node: GraphNode) => {
    const output = node.outputs[0];
    const wide = `${output}/padded`;
    const { scale, zeroPoint } = paramsOf(output);
    const indices = `${output}/channel_0`;
    added.push(tensorOf(indices, onnx.INT64, [1], BigInt64Array.of(0n)));
    out.push(
      { ...node, outputs: [wide] },
      { opType: 'QuantizeLinear', name: `${wide}/quantize`, inputs: [wide, scale, zeroPoint], outputs: [`${wide}/quantized`], rest: [] },
      { opType: 'DequantizeLinear', name: `${wide}/dequantize`, inputs: [`${wide}/quantized`, scale, zeroPoint], outputs: [`${wide}/dequantized`], rest: [] },
      { opType: 'Gather', name: `${output}/gather`, inputs: [`${wide}/dequantized`, indices], outputs: [output], rest: [intAttribute('axis', 1)] },
    );
    quantize(output);
  };

  let quantizedConvs = 0;
  let keptConvs = 0;
  for (const name of model.inputs) if (quantized.has(name)) quantize(name);
  for (const original of nodes) {
    const node = { ...original, inputs: [...original.inputs] };
    if (node.opType === 'Shape' && quantized.has(node.inputs[0])) node.inputs[0] = quantizedName(node.inputs[0]);
    else for (const i of dataInputs(node)) if (quantized.has(node.inputs[i])) node.inputs[i] = dequantize(node.inputs[i]);
    if (node.opType === 'Conv') {
      if (isIntegerConv(node) && quantized.has(original.inputs[0])) {
        const narrow = initializers.get(node.inputs[1])!.dims[0] === 1 && quantized.has(node.outputs[0]);
        node.inputs.splice(1, 2, ...quantizeConvWeights(node, paramsOf(original.inputs[0]).params.scale, narrow ? NARROW_PADDED_TO : undefined));
        quantizedConvs++;
        if (narrow) {
          widenAndGather(node);
          continue;
        }
      } else keptConvs++;
    }
    out.push(node);
    for (const name of node.outputs) if (quantized.has(name)) quantize(name);
  }

  const read = new Set(out.flatMap((node) => node.inputs));
  const tensors = new Map([...initializers.values()].filter((tensor) => read.has(tensor.name)).concat(added).map((tensor) => [tensor.name, tensor]));
  const regroupedConvs = (options.spaceToDepth ?? true) ? spaceToDepthInputs(model, out, tensors) : 0;
  return { model: writeModel(model, out, tensors.values()), quantizedConvs, floatConvs: keptConvs, foldedConvs, regroupedConvs };
}
