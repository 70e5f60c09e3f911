/**
 * A strided int8 convolution on the photo, rewritten as a stride-1 one on the photo's pixels
 * regrouped by SpaceToDepth: IS-Net's first convolution (after fold-convs.ts, 3 → 64
 * channels, 7×7, stride 2) becomes a 4×4 one on 12 channels at 512². The runtime's int8
 * convolution works through its input's channels a few at a time at each of the kernel's
 * positions, which three channels and 49 positions fill badly; twelve channels and 16
 * positions it runs at about three times the speed, for 31 % more multiplications (the
 * kernel's added taps are zeros), and the float32 SpaceToDepth before the input's
 * QuantizeLinear costs less than that gains (docs/internals/performance.md, "int8 model").
 *
 * The rewrite is exact. With block `s`, input row `r = s·q + p` is channel group `p` of row
 * `q`. A convolution's output row `i` reads rows `s·i − P + k` (`k` < kernel, `P` its top
 * padding); with `Q = ⌈P / s⌉` and `δ = s·Q − P` that is row `i − Q + t` of the regrouped
 * input, phase `p`, for `s·t + p = δ + k`. The new kernel holds the old weight at (`t`, `p`)
 * and zero where `δ + k` falls outside the old kernel; padding is `Q` before and
 * `⌊(P + P_end − kernel) / s⌋ − ⌊(P − kernel) / s⌋` after, so the output has the same size.
 * Padded values are the input's zero point in both forms.
 */

import * as onnx from '../onnx-fields.js';
import { plainConvGeometry } from './fold-convs.js';
import { graphInputDims, intAttribute, intsAttribute, tensorOf, type EditableModel, type GraphNode, type GraphTensor } from './onnx-graph.js';

/** Inputs with at most this many channels are regrouped (a photo's RGB or RGBA). */
const MAX_CHANNELS = 4;

/** One axis of a convolution seen through SpaceToDepth with block `s`. */
interface RegroupedAxis {
  /** The new kernel's size, and its padding before and after. */
  kernel: number;
  padBefore: number;
  padAfter: number;
  /** The old kernel index at new tap `t`, phase `p`, or −1 where the new kernel is zero. */
  source: (t: number, p: number) => number;
}

function regroupAxis(kernel: number, padBefore: number, padAfter: number, s: number): RegroupedAxis {
  const before = Math.ceil(padBefore / s);
  const delta = s * before - padBefore;
  return {
    kernel: Math.ceil((delta + kernel) / s),
    padBefore: before,
    padAfter: Math.floor((padBefore + padAfter - kernel) / s) - Math.floor((padBefore - kernel) / s),
    source: (t, p) => {
      const k = s * t + p - delta;
      return k >= 0 && k < kernel ? k : -1;
    },
  };
}

/**
 * The weights [out, C, kh, kw] of a convolution with stride `s` as those of the stride-1
 * convolution on SpaceToDepth(s) of its input: [out, s·s·C, kh′, kw′], channel
 * `(py·s + px)·C + c` as SpaceToDepth orders them; also the new kernel size and pads
 * ([top, left, bottom, right]).
 */
function regroupWeights(values: Int8Array, dims: number[], s: number, pads: number[]): { values: Int8Array; dims: number[]; pads: number[] } {
  const [outputs, channels, kh, kw] = dims;
  const [rows, cols] = [regroupAxis(kh, pads[0], pads[2], s), regroupAxis(kw, pads[1], pads[3], s)];
  const regrouped = new Int8Array(outputs * s * s * channels * rows.kernel * cols.kernel);
  for (let o = 0; o < outputs; o++) {
    for (let py = 0; py < s; py++) {
      for (let px = 0; px < s; px++) {
        for (let c = 0; c < channels; c++) {
          const channel = (py * s + px) * channels + c;
          for (let ty = 0; ty < rows.kernel; ty++) {
            const y = rows.source(ty, py);
            if (y < 0) continue;
            for (let tx = 0; tx < cols.kernel; tx++) {
              const x = cols.source(tx, px);
              if (x < 0) continue;
              regrouped[((o * s * s * channels + channel) * rows.kernel + ty) * cols.kernel + tx] = values[((o * channels + c) * kh + y) * kw + x];
            }
          }
        }
      }
    }
  }
  return { values: regrouped, dims: [outputs, s * s * channels, rows.kernel, cols.kernel], pads: [rows.padBefore, cols.padBefore, rows.padAfter, cols.padAfter] };
}

/**
 * Rewrites, in `nodes` and `tensors` (a QDQ graph as qdq-model.ts writes it), every graph
 * input of few channels that only strided int8 convolutions read: a SpaceToDepth before its
 * QuantizeLinear, and each convolution's weights, kernel, stride and pads regrouped to match.
 * Returns how many convolutions were rewritten.
 */
export function spaceToDepthInputs(model: EditableModel, nodes: GraphNode[], tensors: Map<string, GraphTensor>): number {
  const producer = new Map(nodes.flatMap((node) => node.outputs.map((output) => [output, node] as const)));
  const readersOf = (name: string) => nodes.filter((node) => node.inputs.includes(name));
  let rewritten = 0;
  for (const input of model.inputs) {
    const dims = graphInputDims(model, input);
    const quantize = nodes.find((node) => node.opType === 'QuantizeLinear' && node.inputs[0] === input);
    if (!dims || dims.length !== 4 || dims[1] > MAX_CHANNELS || !quantize || readersOf(input).length !== 1) continue;
    const dequantizes = readersOf(quantize.outputs[0]);
    const convs = dequantizes.flatMap((node) => (node.opType === 'DequantizeLinear' ? readersOf(node.outputs[0]) : [node]));
    const plans = convs.map((conv) => {
      const weights = producer.get(conv.inputs[1]);
      const values = weights?.opType === 'DequantizeLinear' ? tensors.get(weights.inputs[0]) : undefined;
      const geometry = plainConvGeometry(conv);
      const [sy, sx] = geometry?.strides ?? [1, 1];
      const plain = geometry && producer.get(conv.inputs[0])?.inputs[0] === quantize.outputs[0] && values?.dataType === onnx.INT8 && values.dims.length === 4;
      return plain && sy === sx && sy > 1 ? { conv, values: values!, stride: sy, pads: geometry.pads } : undefined;
    });
    const stride = plans[0]?.stride;
    if (!stride || plans.some((plan) => plan?.stride !== stride) || dims[2] % stride !== 0 || dims[3] % stride !== 0) continue;

    for (const { conv, values, pads } of plans as NonNullable<(typeof plans)[number]>[]) {
      const regrouped = regroupWeights(new Int8Array(values.raw.buffer, values.raw.byteOffset, values.raw.byteLength), values.dims, stride, pads);
      tensors.set(values.name, tensorOf(values.name, onnx.INT8, regrouped.dims, regrouped.values));
      conv.rest = [intsAttribute('kernel_shape', regrouped.dims.slice(2)), intsAttribute('strides', [1, 1]), intsAttribute('pads', regrouped.pads), intAttribute('group', 1)];
      rewritten++;
    }
    const regroupedInput = `${input}/space_to_depth`;
    nodes.splice(nodes.indexOf(quantize), 0, { opType: 'SpaceToDepth', name: regroupedInput, inputs: [input], outputs: [regroupedInput], rest: [intAttribute('blocksize', stride)] });
    quantize.inputs[0] = regroupedInput;
  }
  return rewritten;
}
