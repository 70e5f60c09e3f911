import type { Segmenter } from '../model/onnx-segmenter.js';
import type { RawImage } from './raw-image.js';

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

/**
 * Second stage: runs the model on the model-sized picture and returns its foreground mask at
 * the model's size (255 = foreground). The picture's pixels are handed to the model's thread
 * when the segmenter takes them (`Segmenter.segment`): the caller must not use them afterwards.
 */
export async function segment(modelInput: RawImage, segmenter: Segmenter): Promise<RawImage> {
  if (modelInput.width !== segmenter.size || modelInput.height !== segmenter.size || modelInput.channels !== 3) {
    throw new Error(`segment needs ${segmenter.size}×${segmenter.size}×3, got ${modelInput.width}×${modelInput.height}×${modelInput.channels}`);
  }
  if (segmenter.segment) return segmenter.segment(modelInput);
  const probabilities = await segmenter.run(toModelTensor(modelInput, segmenter.tensor?.()));
  return toMask(probabilities, segmenter.size);
}
