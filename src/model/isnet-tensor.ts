import type { RawImage } from '../image/raw-image.js';

// IS-Net's side of the model step: its input tensor from 8-bit RGB, its output as an 8-bit
// mask. Both run on the model's own thread (`segmenter-worker.ts`), never on the event loop.

/** IS-Net's normalisation, (x − 128) / 256, for each 8-bit value. */
const NORMALISED = Float32Array.from({ length: 256 }, (_, x) => (x - 128) / 256);

/**
 * Fills the model's planar float tensor from interleaved RGB in one pass, with the
 * normalisation IS-Net was trained with: (x − 128) / 256 per channel. Writes into `tensor`
 * when one is given (a buffer reused from an earlier run; it must have the right length).
 */
export function toModelTensor(input: RawImage, tensor: Float32Array = new Float32Array(3 * input.width * input.height)): Float32Array {
  const plane = input.width * input.height;
  if (tensor.length !== 3 * plane) throw new Error(`toModelTensor: the tensor has ${tensor.length} values, expected ${3 * plane}`);
  const { data } = input;
  for (let i = 0, p = 0; p < plane; p++, i += 3) {
    tensor[p] = NORMALISED[data[i]];
    tensor[plane + p] = NORMALISED[data[i + 1]];
    tensor[2 * plane + p] = NORMALISED[data[i + 2]];
  }
  return tensor;
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
