import * as ort from 'onnxruntime-node';
import { describe, expect, it } from 'vitest';
import { cpuHasInt8DotProduct } from '../helpers/cpu-int8.js';
import * as onnx from '../../src/model/onnx-fields.js';
import { lengthDelimitedField, stringField, varintField } from '../../src/model/onnx-wire.js';
import { foldConvChains } from '../../src/model/quantize/fold-convs.js';
import { parseInt8Ranges } from '../../src/model/quantize/int8-ranges.js';
import { floatValueInfo, intAttribute, intAttributes, intsAttribute, openModel, tensorOf, writeModel, type EditableModel, type GraphNode } from '../../src/model/quantize/onnx-graph.js';
import { probeModels, seeded } from '../../src/model/quantize/probe-models.js';
import { quantizeModel } from '../../src/model/quantize/qdq-model.js';
import { quantizeBias, quantizeWeights, uint8Params } from '../../src/model/quantize/quantization-params.js';
import { tensorStats } from '../../scripts/quantize/tensor-percentiles.js';
import { disableOnnxRuntimeTelemetry } from '../../src/model/onnx-runtime-telemetry.js';

disableOnnxRuntimeTelemetry();

describe('quantization parameters', () => {
  it('map a range onto uint8 with 0 exact, and a range from 0 onto zero point 0', () => {
    expect(uint8Params(0, 25.5)).toEqual({ scale: Math.fround(0.1), zeroPoint: 0 });
    const { scale, zeroPoint } = uint8Params(-1, 3);
    expect(zeroPoint).toBe(64);
    expect(-zeroPoint * scale).toBeCloseTo(-1, 1);
    expect((255 - zeroPoint) * scale).toBeCloseTo(3, 1);
    // A range that leaves out 0 is widened to take it in.
    expect(uint8Params(2, 5.1).zeroPoint).toBe(0);
    expect(uint8Params(0, 0)).toEqual({ scale: 1, zeroPoint: 0 });
  });

  it('quantize weights per output channel, symmetric in ±127', () => {
    const weights = Float32Array.of(0.5, -1, 0.25, 0.01, 0.021, -0.04);
    const { values, scales } = quantizeWeights(weights, 2);
    expect([...values]).toEqual([64, -127, 32, 32, 67, -127]);
    expect(scales[0]).toBeCloseTo(1 / 127, 7);
    expect(scales[1]).toBeCloseTo(0.04 / 127, 9);
    // Each channel comes back within half a step of itself.
    for (let i = 0; i < weights.length; i++) expect(Math.abs(values[i] * scales[i < 3 ? 0 : 1] - weights[i])).toBeLessThanOrEqual(scales[i < 3 ? 0 : 1] / 2);
    expect(() => quantizeWeights(weights, 4)).toThrow(/do not split/);
  });

  it('quantize a bias at input scale × weight scale', () => {
    const { values, scales } = quantizeBias(Float32Array.of(0.3, -0.2), 0.01, Float32Array.of(0.5, 0.1));
    expect([...scales]).toEqual([Math.fround(0.005), Math.fround(Math.fround(0.01) * Math.fround(0.1))]);
    expect([...values]).toEqual([60, -200]);
  });
});

describe('tensorStats', () => {
  it('finds percentiles of a large tensor within its bin width, as a sort does', () => {
    const values = new Float32Array(200_000);
    let state = 12345;
    for (let i = 0; i < values.length; i++) {
      state = (Math.imul(state, 1103515245) + 12345) >>> 0;
      values[i] = (state / 2 ** 32) ** 3 * 50 - 1; // skewed, like an activation
    }
    values[17] = 900; // one outlier
    const sorted = Float64Array.from(values).sort();
    const { min, max, percentiles } = tensorStats(values, [0.0001, 0.5, 0.9999]);
    expect([min, max]).toEqual([sorted[0], 900]);
    for (const [i, fraction] of [0.0001, 0.5, 0.9999].entries()) {
      expect(Math.abs(percentiles[i] - sorted[Math.floor(fraction * (values.length - 1))])).toBeLessThan(1e-3);
    }
    expect(percentiles[2]).toBeLessThan(50); // the outlier does not drag the 99.99th percentile
  });
});

describe('the QDQ rewrite', () => {
  it('quantizes a convolution: int8 weights and int32 bias behind DequantizeLinear, a Q/DQ pair after the Relu', () => {
    const { fp32, int8 } = probeModels();
    const before = openModel(fp32);
    const after = openModel(int8);
    const ops = after.nodes.map((node) => node.opType);
    // x quantized, then for each layer: its input's DQ, the weights' and the bias's DQ, Conv, Relu, Q.
    expect(ops.slice(0, 7)).toEqual(['QuantizeLinear', 'DequantizeLinear', 'DequantizeLinear', 'DequantizeLinear', 'Conv', 'Relu', 'QuantizeLinear']);
    expect(ops.slice(-2)).toEqual(['DequantizeLinear', 'Sigmoid']);
    expect(ops.filter((op) => op === 'QuantizeLinear')).toHaveLength(5);
    const conv = after.nodes.find((node) => node.name === 'conv1')!;
    expect(conv.inputs).toEqual(['relu0/dequantized/2', 'w1/dequantized', 'b1/dequantized']);
    expect(after.initializers.get('w1/int8')).toMatchObject({ dataType: 3, dims: [64, 64, 3, 3] });
    expect(after.initializers.get('b1/int32')).toMatchObject({ dataType: 6, dims: [64] });
    expect(after.initializers.has('w1')).toBe(false); // the float weights are gone
    expect(int8.length).toBeLessThan(fp32.length / 3);
    expect(after.outputs).toEqual(before.outputs);
  });

  it('refuses a calibration file without the ranges the model needs, and ops it does not know', () => {
    const { fp32 } = probeModels();
    const ranges = { model: 'other', rule: '', photos: 0, floatConvs: [], ranges: { x: [-1, 1] as [number, number] } };
    expect(() => quantizeModel(fp32, ranges)).toThrow(/no range for relu0/);
    // With a convolution kept in float, its Relu's output still needs a range; its weights stay float.
    const all = { x: [-1, 1], relu0: [0, 3], relu1: [0, 3], relu2: [0, 3], relu3: [0, 3] } as Record<string, [number, number]>;
    const mixed = quantizeModel(fp32, { ...ranges, floatConvs: ['conv2'], ranges: all });
    expect([mixed.quantizedConvs, mixed.floatConvs]).toEqual([3, 1]);
    const graph = openModel(mixed.model);
    expect(graph.initializers.get('w2')).toMatchObject({ dataType: 1 });
    expect(graph.nodes.find((node) => node.name === 'conv2')!.inputs).toEqual(['relu1/dequantized/3', 'w2', 'b2']);
    // An op on activations the rewrite does not know stops it.
    const withSoftmax = openModel(fp32);
    withSoftmax.nodes[1].opType = 'Softmax';
    expect(() => quantizeModel(writeModel(withSoftmax, withSoftmax.nodes, withSoftmax.initializers.values()), { ...ranges, ranges: all })).toThrow(/does not know Softmax/);
  });

  it('reads calibration files strictly', () => {
    expect(() => parseInt8Ranges({ model: 'm', rule: 'r', photos: 1, floatConvs: [], ranges: { a: [2, 1] } }, 'f.json')).toThrow(/range of a/);
    expect(() => parseInt8Ranges({ model: 'm', rule: 'r', photos: 1, ranges: {} }, 'f.json')).toThrow(/floatConvs/);
    expect(parseInt8Ranges({ model: 'm', rule: 'r', photos: 1, floatConvs: ['c'], ranges: { a: [0, 1] } }, 'f.json').floatConvs).toEqual(['c']);
  });
});

describe('folding a convolution into the one that reads it', () => {
  // x [1, 3, 16, 16] → a: 3→4, 3×3, stride 2, pads 1 → b: 4→5, 3×3, stride 1, pads 1 → Relu → y [1, 5, 8, 8]
  const SIZE = 16;
  const OUT = SIZE / 2;
  function chain(extraReaderOfA = false): EditableModel {
    const pads = intsAttribute('pads', [1, 1, 1, 1]);
    const nodes: GraphNode[] = [
      { opType: 'Conv', name: 'a', inputs: ['x', 'wa', 'ba'], outputs: ['ya'], rest: [intsAttribute('kernel_shape', [3, 3]), intsAttribute('strides', [2, 2]), pads] },
      { opType: 'Conv', name: 'b', inputs: ['ya', 'wb', 'bb'], outputs: ['yb'], rest: [intsAttribute('kernel_shape', [3, 3]), pads, intAttribute('group', 1)] },
      { opType: 'Relu', name: 'relu', inputs: [extraReaderOfA ? 'ya' : 'yb'], outputs: ['y'], rest: [] },
    ];
    const initializers = [
      tensorOf('wa', onnx.FLOAT, [4, 3, 3, 3], seeded(4 * 27, 0.5, 1)),
      tensorOf('ba', onnx.FLOAT, [4], seeded(4, 0.5, 2)),
      tensorOf('wb', onnx.FLOAT, [5, 4, 3, 3], seeded(5 * 36, 0.5, 3)),
      tensorOf('bb', onnx.FLOAT, [5], seeded(5, 0.5, 4)),
    ];
    const outputs = extraReaderOfA ? [floatValueInfo(onnx.GRAPH_OUTPUT, 'y', [1, 4, OUT, OUT]), floatValueInfo(onnx.GRAPH_OUTPUT, 'yb', [1, 5, OUT, OUT])] : [floatValueInfo(onnx.GRAPH_OUTPUT, 'y', [1, 5, OUT, OUT])];
    return {
      nodes,
      initializers: new Map(initializers.map((tensor) => [tensor.name, tensor])),
      inputs: ['x'],
      outputs: extraReaderOfA ? ['y', 'yb'] : ['y'],
      graphFields: [stringField(2, 'fold'), floatValueInfo(onnx.GRAPH_INPUT, 'x', [1, 3, SIZE, SIZE]), ...outputs],
      modelFields: [varintField(1, 8), lengthDelimitedField(onnx.MODEL_OPSET_IMPORT, varintField(onnx.OPSET_VERSION, 15))],
    };
  }
  async function run(model: EditableModel, x: Float32Array): Promise<Float32Array> {
    const session = await ort.InferenceSession.create(new Uint8Array(writeModel(model, model.nodes, model.initializers.values())));
    const { y } = await session.run({ x: new ort.Tensor('float32', x, [1, 3, SIZE, SIZE]) });
    await session.release();
    return y.data as Float32Array;
  }

  it('gives one 7×7 stride-2 convolution with the same values inside the frame, and different ones on it', async () => {
    const x = seeded(3 * SIZE * SIZE, 1, 5);
    const before = await run(chain(), x);
    const model = chain();
    expect(foldConvChains(model)).toBe(1);
    expect(model.nodes.map((node) => node.name)).toEqual(['b', 'relu']);
    const folded = model.nodes[0];
    expect(folded.inputs[0]).toBe('x');
    expect(intAttributes(folded)).toEqual(new Map([['kernel_shape', [7, 7]], ['strides', [2, 2]], ['pads', [3, 3, 3, 3]], ['group', [1]]]));
    const after = await run(model, x);
    let frameDiffers = false;
    for (let c = 0; c < 5; c++) {
      for (let row = 0; row < OUT; row++) {
        for (let col = 0; col < OUT; col++) {
          const i = (c * OUT + row) * OUT + col;
          const onFrame = row === 0 || col === 0 || row === OUT - 1 || col === OUT - 1;
          if (!onFrame) expect(after[i]).toBeCloseTo(before[i], 5);
          else if (Math.abs(after[i] - before[i]) > 1e-3) frameDiffers = true;
        }
      }
    }
    // The edge is where the fold is not exact (the first convolution's output was padded with zeros).
    expect(frameDiffers).toBe(true);
  });

  it('leaves a convolution that something else reads too, or that the calibration keeps in float32', () => {
    const shared = chain(true);
    expect(foldConvChains(shared)).toBe(0);
    const kept = chain();
    expect(foldConvChains(kept, new Set(['a']))).toBe(0);
    expect(kept.nodes).toHaveLength(3);
  });

  it('runs before the QDQ rewrite, which then quantizes one convolution reading the input', () => {
    const fp32 = writeModel(chain(), chain().nodes, chain().initializers.values());
    const ranges = { model: 'fold', rule: '', photos: 0, floatConvs: [] as string[], ranges: { x: [-1, 1], ya: [-2, 2], y: [0, 3] } as Record<string, [number, number]> };
    const folded = quantizeModel(fp32, ranges);
    expect([folded.foldedConvs, folded.quantizedConvs, folded.floatConvs]).toEqual([1, 1, 0]);
    expect(openModel(folded.model).nodes.find((node) => node.name === 'b')!.inputs[0]).toBe('x/dequantized/1');
    const keptFloat = quantizeModel(fp32, { ...ranges, floatConvs: ['a'] });
    expect([keptFloat.foldedConvs, keptFloat.quantizedConvs, keptFloat.floatConvs]).toEqual([0, 1, 1]);
  });
});

describe('regrouping the photo for a strided int8 convolution (SpaceToDepth)', () => {
  // x [1, C, 16, 16] → Conv C→16 → Relu → Sigmoid → y, stride 2 and C = 3 unless said, in the
  // kernel sizes and pads of IS-Net's folded first convolution (7×7, pads 3), of conv_in (3×3,
  // pads 1) and an uneven one.
  const SIZE = 16;
  function strided(kernel: number, pads: number[], stride = 2, channels = 3): Buffer {
    const out = Math.floor((SIZE + pads[0] + pads[2] - kernel) / stride) + 1;
    const model: EditableModel = {
      nodes: [
        { opType: 'Conv', name: 'conv', inputs: ['x', 'w', 'b'], outputs: ['c'], rest: [intsAttribute('kernel_shape', [kernel, kernel]), intsAttribute('strides', [stride, stride]), intsAttribute('pads', pads)] },
        { opType: 'Relu', name: 'relu', inputs: ['c'], outputs: ['r'], rest: [] },
        { opType: 'Sigmoid', name: 'sigmoid', inputs: ['r'], outputs: ['y'], rest: [] },
      ],
      initializers: new Map(),
      inputs: ['x'],
      outputs: ['y'],
      graphFields: [stringField(2, 'strided'), floatValueInfo(onnx.GRAPH_INPUT, 'x', [1, channels, SIZE, SIZE]), floatValueInfo(onnx.GRAPH_OUTPUT, 'y', [1, 16, out, out])],
      modelFields: [varintField(1, 8), lengthDelimitedField(onnx.MODEL_OPSET_IMPORT, varintField(onnx.OPSET_VERSION, 15))],
    };
    const weights = [tensorOf('w', onnx.FLOAT, [16, channels, kernel, kernel], seeded(16 * channels * kernel * kernel, 0.3, 11)), tensorOf('b', onnx.FLOAT, [16], seeded(16, 0.3, 12))];
    return writeModel(model, model.nodes, weights);
  }
  const ranges = { model: 'strided', rule: '', photos: 0, floatConvs: [] as string[], ranges: { x: [-1, 1], r: [0, 4] } as Record<string, [number, number]> };
  async function run(model: Uint8Array, x: Float32Array): Promise<Float32Array> {
    const session = await ort.InferenceSession.create(new Uint8Array(model));
    const { y } = await session.run({ x: new ort.Tensor('float32', x, [1, 3, SIZE, SIZE]) });
    await session.release();
    return y.data as Float32Array;
  }

  it.each([
    [7, [3, 3, 3, 3], [4, 4], [2, 2, 1, 1]],
    [3, [1, 1, 1, 1], [2, 2], [1, 1, 0, 0]],
    [5, [2, 1, 1, 2], [3, 3], [1, 1, 1, 1]],
  ])('gives a stride-2 convolution of kernel %i, pads %j, the same int8 output as a stride-1 one on 12 channels', async (kernel, pads, regroupedKernel, regroupedPads) => {
    const fp32 = strided(kernel, pads);
    const plain = quantizeModel(fp32, ranges, { spaceToDepth: false });
    const regrouped = quantizeModel(fp32, ranges);
    expect([plain.regroupedConvs, regrouped.regroupedConvs]).toEqual([0, 1]);
    const graph = openModel(regrouped.model);
    expect(graph.nodes.slice(0, 2).map((node) => [node.opType, node.inputs[0]])).toEqual([['SpaceToDepth', 'x'], ['QuantizeLinear', 'x/space_to_depth']]);
    const conv = graph.nodes.find((node) => node.name === 'conv')!;
    expect(intAttributes(conv)).toEqual(new Map([['kernel_shape', regroupedKernel], ['strides', [1, 1]], ['pads', regroupedPads], ['group', [1]]]));
    expect(graph.initializers.get('w/int8')!.dims).toEqual([16, 12, ...regroupedKernel]);
    const x = seeded(3 * SIZE * SIZE, 1, 13);
    const [before, after] = [await run(plain.model, x), await run(regrouped.model, x)];
    // The same integers, bit for bit, where the CPU adds int8 products exactly; without an int8
    // dot product ONNX Runtime's 16-bit pair sums saturate by layout (0.09–0.16 apart on a Zen 3,
    // as far as a wrong rewrite would be), so there only the rewrite's shape above is checked.
    if (cpuHasInt8DotProduct) expect(after).toEqual(before);
  });

  it('leaves a stride-1 convolution on the photo, and a strided one on an input of more than four channels, as they are', () => {
    for (const fp32 of [strided(3, [1, 1, 1, 1], 1), strided(3, [1, 1, 1, 1], 2, 5)]) {
      const quantized = quantizeModel(fp32, ranges);
      expect(quantized.regroupedConvs).toBe(0);
      expect(openModel(quantized.model).nodes.some((node) => node.opType === 'SpaceToDepth')).toBe(false);
    }
  });
});
