/**
 * What the main thread and a model thread (`segmenter-worker.ts`) say to each other; both
 * sides import these types. The worker starts with {@link SegmenterWorkerData}, reports
 * {@link SegmenterReady} (threads/start-worker-thread.ts), then answers each
 * {@link SegmenterRequest} with a {@link SegmenterResult} of the same `id`. Pixels and
 * tensors are moved with transfer lists, never copied.
 */
import type { ThreadError } from '../threads/thread-error.js';
import type { ModelProcessing } from './model-processing.js';

export interface SegmenterWorkerData {
  modelPath: string;
  /** How this model takes its picture and gives its mask (model-presets.ts or `cutout models add`). */
  processing: ModelProcessing;
  /** The provider to run on: `cpu`, or one onnxruntime-node offers (execution-provider.ts); never `auto`. */
  executionProvider: string;
  threads: number;
  /** See SegmenterOptions.memoryArena. */
  memoryArena: boolean;
  /** See SegmenterOptions.memoryPattern. */
  memoryPattern: boolean;
}

/** Starts the worker for the precision probe (quantize/probe-models.ts) instead of a model. */
export interface ProbeWorkerData {
  probe: true;
  threads: number;
  /** Timed runs of each model, alternated, after one untimed run of each. */
  runs: number;
}

/** The probe's ready message: the timings, and a check that both models compute the same thing. */
export interface ProbeResult {
  fp32Ms: number[];
  int8Ms: number[];
  /** Largest difference between the two models' outputs. */
  maxDifference: number;
}

export interface SegmenterReady {
  /** Side of the model's square input, read from the model file. */
  size: number;
}

/**
 * `rgb`: model-sized pictures (the views of one photo), answered with one 8-bit mask each,
 * in order (the pipeline's way in); `aspect` is the photo's width / height, which a model
 * that letterboxes needs (Segmenter.segment). `tensor`: a ready input tensor, answered with the raw
 * probabilities (for measuring the model and comparing model files; see
 * OnnxSegmenter.runTensor).
 */
export type SegmenterRequest = { id: number; rgb: Uint8Array[]; aspect?: number; tensor?: undefined } | { id: number; tensor: Float32Array; rgb?: undefined; aspect?: undefined };

export type SegmenterResult =
  | { id: number; masks: Uint8Array[]; probabilities?: undefined; error?: undefined }
  | { id: number; probabilities: Float32Array; masks?: undefined; error?: undefined }
  | { id: number; error: ThreadError; masks?: undefined; probabilities?: undefined };
