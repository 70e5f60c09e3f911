/**
 * How one model wants its picture and how its answer becomes a mask: the data that tells one
 * segmentation model from another. The model thread fills the input tensor and reads the mask
 * by these fields alone (model-tensor.ts), so a new model is a new row of data, not a new
 * branch of code.
 */

/** What is done to the chosen output before it is a 0..1 probability. */
export type MaskActivation = 'sigmoid' | 'none';

/**
 * How the photo is fitted into the model's square: `stretch`ed to fill it (what most models
 * were trained on), or `letterbox`ed, whole with its aspect kept and padded with black
 * (letterbox.ts).
 */
export type ModelFit = 'stretch' | 'letterbox';

/** One model's input and output handling; every field is plain data that crosses to the model thread. */
export interface ModelProcessing {
  /** Side of the square picture the model takes. */
  inputSize: number;
  /** 8-bit values are divided by this first: 255 (torchvision's ToTensor), 256 (IS-Net as imgly runs it). */
  scale: number;
  /** Subtracted from each channel (R, G, B) after the division. */
  mean: readonly [number, number, number];
  /** Each channel is divided by this after the mean is subtracted. */
  std: readonly [number, number, number];
  /** Which of the model's outputs is the mask (its first channel is read). */
  outputIndex: number;
  /** `sigmoid` when that output holds logits, `none` when it already holds probabilities. */
  activation: MaskActivation;
  /** How the photo fills the square; `stretch` when absent. */
  fit?: ModelFit;
}

/** ImageNet's channel means and deviations, which torchvision-trained models expect. */
export const IMAGENET = { mean: [0.485, 0.456, 0.406], std: [0.229, 0.224, 0.225] } as const;

/** IS-Net as Cutout has always run it: (x − 128) / 256, its own sigmoid in the graph, output 0. */
export const ISNET_PROCESSING: ModelProcessing = Object.freeze({ inputSize: 1024, scale: 256, mean: [0.5, 0.5, 0.5] as const, std: [1, 1, 1] as const, outputIndex: 0, activation: 'none' as const });

/** Throws with a message naming the field when `processing` could not drive a model. */
export function assertProcessing(processing: ModelProcessing): void {
  const { inputSize, scale, mean, std, outputIndex, activation, fit } = processing;
  if (!Number.isInteger(inputSize) || inputSize < 8 || inputSize > 4096) throw new Error(`input size ${inputSize} is not a whole number from 8 to 4096`);
  if (!(scale > 0) || !Number.isFinite(scale)) throw new Error(`scale ${scale} is not a positive number`);
  if (mean.length !== 3 || !mean.every(Number.isFinite)) throw new Error(`mean ${mean.join(',')} is not three numbers R,G,B`);
  if (std.length !== 3 || !std.every((s) => Number.isFinite(s) && s > 0)) throw new Error(`std ${std.join(',')} is not three positive numbers R,G,B`);
  if (!Number.isInteger(outputIndex) || outputIndex < 0) throw new Error(`output index ${outputIndex} is not a whole number ≥ 0`);
  if (activation !== 'sigmoid' && activation !== 'none') throw new Error(`activation ${String(activation)} is neither sigmoid nor none`);
  if (fit !== undefined && fit !== 'stretch' && fit !== 'letterbox') throw new Error(`fit ${String(fit)} is neither stretch nor letterbox`);
}
