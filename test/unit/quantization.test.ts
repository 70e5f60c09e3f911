import { describe, expect, it } from 'vitest';
import { parseInt8Ranges } from '../../src/model/quantize/int8-ranges.js';
import { openModel, writeModel } from '../../src/model/quantize/onnx-graph.js';
import { probeModels } from '../../src/model/quantize/probe-models.js';
import { quantizeModel } from '../../src/model/quantize/qdq-model.js';
import { quantizeBias, quantizeWeights, uint8Params } from '../../src/model/quantize/quantization-params.js';
import { tensorStats } from '../../scripts/quantize/tensor-percentiles.js';

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
