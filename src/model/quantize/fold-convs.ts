/**
 * Folds a convolution whose output feeds one other convolution and nothing else (no
 * activation between them) into that one: IS-Net's `conv_in` (3 → 64 channels, 3×3, stride
 * 2, no Relu) and stage1's first convolution (64 → 64, 3×3) become one 3 → 64 convolution,
 * 7×7 with stride 2, that reads the photo. In the int8 model this takes away a float32
 * convolution at 512², the conversions of its 16.7 million values into the int8 graph's
 * layout, and a 64-channel int8 convolution at 512², for one int8 convolution on three input
 * channels (docs/internals/performance.md, "int8 model").
 *
 * Two convolutions are one: the second's window over the first's output covers, in the
 * input, a window of `kA + (kB − 1)·s` with the first's stride `s`. The values agree
 * everywhere but at the edge, where the second convolution pads the first's output with
 * zeros and the folded one instead sees what the first would have computed there (its bias,
 * and on the far side a row of the photo): a one-pixel frame at the first's resolution,
 * which the layers after it carry a little way inwards (docs/quality.md measures it).
 */

import * as onnx from '../onnx-fields.js';
import { floatValues, intAttribute, intAttributes, intsAttribute, tensorOf, type EditableModel, type GraphNode } from './onnx-graph.js';

/** The geometry of a plain 2-D convolution (group 1, no dilation, explicit pads). */
interface ConvShape {
  /** [out, in, height, width] of its weights. */
  dims: [number, number, number, number];
  strides: [number, number];
  /** [top, left, bottom, right]. */
  pads: [number, number, number, number];
}

/**
 * The strides and pads of a Conv node that is a plain 2-D convolution (group 1, no dilation,
 * explicit pads, no attribute beyond those), else undefined: what this fold and
 * space-to-depth.ts know how to rewrite.
 */
export function plainConvGeometry(node: GraphNode): Pick<ConvShape, 'strides' | 'pads'> | undefined {
  if (node.opType !== 'Conv') return undefined;
  const attributes = intAttributes(node);
  const known = new Set(['kernel_shape', 'strides', 'pads', 'dilations', 'group']);
  if ([...attributes].some(([name, values]) => !known.has(name) || values === undefined)) return undefined; // auto_pad, or an attribute not known here
  if ((attributes.get('group') ?? [1])[0] !== 1 || (attributes.get('dilations') ?? [1, 1]).some((d) => d !== 1)) return undefined;
  const [strideY, strideX] = attributes.get('strides') ?? [1, 1];
  const [top, left, bottom, right] = attributes.get('pads') ?? [0, 0, 0, 0];
  return { strides: [strideY, strideX], pads: [top, left, bottom, right] };
}

/** The convolution's shape when it is one this fold handles, else undefined. */
function plainConv(model: EditableModel, node: GraphNode): ConvShape | undefined {
  const weights = model.initializers.get(node.inputs[1]);
  const geometry = plainConvGeometry(node);
  if (!geometry || !weights || weights.dims.length !== 4 || weights.dataType !== onnx.FLOAT) return undefined;
  if (node.inputs[2] && model.initializers.get(node.inputs[2])?.dataType !== onnx.FLOAT) return undefined;
  return { dims: weights.dims as ConvShape['dims'], ...geometry };
}

/**
 * The weights and bias of `second ∘ first`: W[o][c][u][v] = Σ W₂[o][m][a][b]·W₁[m][c][p][q]
 * over u = s·a + p, v = s·b + q; bias b₂[o] + Σ W₂[o][m][a][b]·b₁[m]. Summed in float64.
 */
function composeWeights(first: ConvShape, w1: Float32Array, b1: Float32Array | undefined, second: ConvShape, w2: Float32Array, b2: Float32Array | undefined): { weights: Float32Array; bias: Float32Array; kernel: [number, number] } {
  const [middle, inputs, h1, w1Width] = first.dims;
  const [outputs, , h2, w2Width] = second.dims;
  const [sy, sx] = first.strides;
  const kernel: [number, number] = [h1 + (h2 - 1) * sy, w1Width + (w2Width - 1) * sx];
  const weights = new Float64Array(outputs * inputs * kernel[0] * kernel[1]);
  const bias = Float64Array.from(b2 ?? new Float32Array(outputs));
  for (let o = 0; o < outputs; o++) {
    for (let m = 0; m < middle; m++) {
      for (let a = 0; a < h2; a++) {
        for (let b = 0; b < w2Width; b++) {
          const outer = w2[((o * middle + m) * h2 + a) * w2Width + b];
          if (b1) bias[o] += outer * b1[m];
          for (let c = 0; c < inputs; c++) {
            for (let p = 0; p < h1; p++) {
              const row = ((o * inputs + c) * kernel[0] + sy * a + p) * kernel[1] + sx * b;
              const inner = ((m * inputs + c) * h1 + p) * w1Width;
              for (let q = 0; q < w1Width; q++) weights[row + q] += outer * w1[inner + q];
            }
          }
        }
      }
    }
  }
  return { weights: Float32Array.from(weights), bias: Float32Array.from(bias), kernel };
}

/**
 * Folds, in place, every convolution whose output only a stride-1 convolution reads into
 * that reader, which keeps its name and output; convolutions named in `keep` (those the
 * calibration file keeps in float32) are left as they are. Returns how many were folded.
 */
export function foldConvChains(model: EditableModel, keep: ReadonlySet<string> = new Set()): number {
  let folded = 0;
  for (let i = 0; i < model.nodes.length; i++) {
    const first = model.nodes[i];
    const readers = model.nodes.filter((node) => node.inputs.includes(first.outputs[0]));
    const second = readers[0];
    if (readers.length !== 1 || model.outputs.includes(first.outputs[0]) || keep.has(first.name) || keep.has(second.name)) continue;
    const [shapeA, shapeB] = [plainConv(model, first), plainConv(model, second)];
    if (!shapeA || !shapeB || second.inputs[0] !== first.outputs[0] || shapeB.strides.some((s) => s !== 1) || shapeB.dims[1] !== shapeA.dims[0]) continue;

    const values = (name: string | undefined) => (name ? floatValues(model.initializers.get(name)!) : undefined);
    const { weights, bias, kernel } = composeWeights(shapeA, values(first.inputs[1])!, values(first.inputs[2]), shapeB, values(second.inputs[1])!, values(second.inputs[2]));
    const [sy, sx] = shapeA.strides;
    const pads = [shapeA.pads[0] + shapeB.pads[0] * sy, shapeA.pads[1] + shapeB.pads[1] * sx, shapeA.pads[2] + shapeB.pads[2] * sy, shapeA.pads[3] + shapeB.pads[3] * sx];
    const names = [`${second.name}/folded_weights`, `${second.name}/folded_bias`];
    model.initializers.set(names[0], tensorOf(names[0], onnx.FLOAT, [shapeB.dims[0], shapeA.dims[1], ...kernel], weights));
    model.initializers.set(names[1], tensorOf(names[1], onnx.FLOAT, [shapeB.dims[0]], bias));
    const foldedNode: GraphNode = {
      opType: 'Conv',
      name: second.name,
      inputs: [first.inputs[0], ...names],
      outputs: second.outputs,
      rest: [intsAttribute('kernel_shape', kernel), intsAttribute('strides', [sy, sx]), intsAttribute('pads', pads), intAttribute('group', 1)],
    };
    model.nodes.splice(model.nodes.indexOf(second), 1, foldedNode);
    model.nodes.splice(i--, 1); // the folded node, further on, may be the first of another pair
    folded++;
  }
  return folded;
}
