import type { RawImage } from '../image/raw-image.js';
import type { ModelProcessing } from './model-processing.js';

// A model's side of the model step, driven by its processing (model-processing.ts): its input
// tensor from 8-bit RGB, its chosen output as probabilities, and those as an 8-bit mask. All
// run on the model's own thread (`segmenter-worker.ts`), never on the event loop.

/** For each channel, the normalised value of each 8-bit value: (x / scale − mean) / std. */
export type ChannelTables = readonly [Float32Array, Float32Array, Float32Array];

/** The three lookup tables of a processing, computed once per model thread. */
export function channelTables({ scale, mean, std }: ModelProcessing): ChannelTables {
  const table = (c: number) => Float32Array.from({ length: 256 }, (_, x) => (x / scale - mean[c]) / std[c]);
  return [table(0), table(1), table(2)];
}

/**
 * Fills the model's planar (NCHW) float tensor from interleaved RGB in one pass, each channel
 * through its table. Writes into `tensor` when one is given (a buffer reused from an earlier
 * run; it must have the right length).
 *
 * @example toModelTensor(picture, channelTables(ISNET_PROCESSING))
 */
export function toModelTensor(input: RawImage, tables: ChannelTables, tensor: Float32Array = new Float32Array(3 * input.width * input.height)): Float32Array {
  const plane = input.width * input.height;
  if (tensor.length !== 3 * plane) throw new Error(`toModelTensor: the tensor has ${tensor.length} values, expected ${3 * plane}`);
  const { data } = input;
  const [r, g, b] = tables;
  for (let i = 0, p = 0; p < plane; p++, i += 3) {
    tensor[p] = r[data[i]];
    tensor[plane + p] = g[data[i + 1]];
    tensor[2 * plane + p] = b[data[i + 2]];
  }
  return tensor;
}

/**
 * The first `size × size` channel of a model output of shape `[1, C, size, size]` (or
 * `[1, size, size]`) as 0..1 probabilities: the output's own buffer when it has one channel, put through
 * the sigmoid in place when the output holds logits. Throws naming the output when its shape
 * is not the model's square.
 */
export function toProbabilities(output: Float32Array, dims: readonly number[], size: number, processing: Pick<ModelProcessing, 'activation'>, name: string): Float32Array {
  const [height, width] = dims.slice(-2);
  if (dims.length < 3 || height !== size || width !== size || output.length < size * size) {
    throw new Error(`model output ${name} has shape [${dims.join(', ')}], expected [1, C, ${size}, ${size}]`);
  }
  // A copy of the first channel when there are more, so that only it travels between threads.
  const probabilities = output.length === size * size ? output : output.slice(0, size * size);
  if (processing.activation === 'sigmoid') {
    for (let i = 0; i < probabilities.length; i++) probabilities[i] = 1 / (1 + Math.exp(-probabilities[i]));
  }
  return probabilities;
}

/** Turns the model's 0..1 probabilities into an 8-bit, one-channel mask. */
export function toMask(probabilities: Float32Array, size: number): RawImage {
  const data = new Uint8Array(probabilities.length);
  for (let i = 0; i < probabilities.length; i++) {
    const p = probabilities[i];
    // `(v + 0.5) | 0` rounds a non-negative v, as Math.round does, at a fraction of its cost.
    data[i] = p > 0 ? (p < 1 ? (p * 255 + 0.5) | 0 : 255) : 0;
  }
  return { data, width: size, height: size, channels: 1 };
}
