/**
 * The arithmetic of ONNX's linear quantization, as the QDQ layout uses it:
 * `real = (q − zeroPoint) × scale`. Activations are uint8 with a zero point (asymmetric),
 * weights int8 per output channel with zero point 0 (symmetric), biases int32 at the scale of
 * input × weight, which is what ONNX Runtime's QLinearConv adds them at. The u8 × s8 pairing
 * is the one x86 CPUs with VNNI (and AMX) multiply fastest.
 *
 * Scales are rounded to float32 here, as the model stores them, so that a bias quantized with
 * them is at exactly the scale ONNX Runtime computes from the stored values.
 */

/** One tensor's uint8 quantization: its float32 scale and its zero point. */
export interface Uint8Params {
  scale: number;
  zeroPoint: number;
}

/**
 * The uint8 parameters that cover `[min, max]`, widened to take in 0 (so that 0 is exact,
 * which padding and Relu need). A range whose minimum is 0 gets zero point 0, which lets
 * ONNX Runtime drop a Relu in front of the QuantizeLinear.
 */
export function uint8Params(min: number, max: number): Uint8Params {
  const low = Math.min(min, 0);
  const high = Math.max(max, 0);
  if (!(high > low)) return { scale: 1, zeroPoint: 0 };
  const scale = Math.fround((high - low) / 255);
  return { scale, zeroPoint: Math.min(255, Math.max(0, Math.round(-low / scale))) };
}

/** Symmetric int8 weights, one scale per output channel (the first dimension). */
export interface ChannelWeights {
  values: Int8Array;
  scales: Float32Array;
}

/**
 * Quantizes a convolution's weights per output channel to int8 in [−127, 127] (ONNX
 * Runtime's quantizer leaves −128 out too, so that the range is symmetric).
 */
export function quantizeWeights(weights: Float32Array, channels: number): ChannelWeights {
  const perChannel = weights.length / channels;
  if (!Number.isInteger(perChannel)) throw new Error(`${weights.length} weights do not split into ${channels} channels`);
  const values = new Int8Array(weights.length);
  const scales = new Float32Array(channels);
  for (let c = 0; c < channels; c++) {
    const from = c * perChannel;
    let largest = 0;
    for (let i = from; i < from + perChannel; i++) largest = Math.max(largest, Math.abs(weights[i]));
    const scale = largest > 0 ? Math.fround(largest / 127) : 1;
    scales[c] = scale;
    for (let i = from; i < from + perChannel; i++) values[i] = Math.max(-127, Math.min(127, Math.round(weights[i] / scale)));
  }
  return { values, scales };
}

/** A bias as int32 at the scale `inputScale × weightScales[c]`, and those scales. */
export function quantizeBias(bias: Float32Array, inputScale: number, weightScales: Float32Array): { values: Int32Array; scales: Float32Array } {
  const values = new Int32Array(bias.length);
  const scales = new Float32Array(bias.length);
  for (let c = 0; c < bias.length; c++) {
    scales[c] = Math.fround(Math.fround(inputScale) * weightScales[c]);
    values[c] = Math.max(-(2 ** 31), Math.min(2 ** 31 - 1, Math.round(bias[c] / scales[c])));
  }
  return { values, scales };
}
