/**
 * The worker thread behind one {@link Segmenter} instance, and the only module that imports
 * onnxruntime-node. ONNX Runtime's Node binding runs a model synchronously on the thread
 * that calls it (its `run` only defers the call with setImmediate), so running it on the
 * main thread would freeze every other request for the length of a pass.
 *
 * Protocol: started with {@link SegmenterWorkerData}; posts one {@link WorkerReady} or
 * {@link WorkerFailed}; then answers each {@link RunRequest} with a {@link RunResult}.
 */
import { parentPort, workerData } from 'node:worker_threads';
import * as ort from 'onnxruntime-node';
import { toMask, toModelTensor } from '../pipeline/segment.js';

export interface SegmenterWorkerData {
  modelPath: string;
  threads: number;
  /** See SegmenterOptions.memoryArena. */
  memoryArena: boolean;
  /** See SegmenterOptions.memoryPattern. */
  memoryPattern: boolean;
}
export interface WorkerReady {
  type: 'ready';
  size: number;
}
export interface WorkerFailed {
  type: 'failed';
  message: string;
}
/** A run on a ready tensor (`input`), or on the model-sized RGB picture (`rgb`), answered with its mask. */
export type RunRequest = { id: number; input: Float32Array; rgb?: undefined } | { id: number; rgb: Uint8Array; input?: undefined };
export interface RunResult {
  id: number;
  /** The probabilities, for an `input` run. */
  output?: Float32Array;
  /** The 8-bit mask, for an `rgb` run. */
  mask?: Uint8Array;
  /** The run's input, handed back for the next run to fill (Segmenter.tensor). */
  input?: Float32Array;
  error?: string;
}

const port = parentPort;
if (!port) throw new Error('segmenter-worker must run as a worker thread');
const { modelPath, threads, memoryArena, memoryPattern } = workerData as SegmenterWorkerData;

try {
  const session = await ort.InferenceSession.create(modelPath, {
    intraOpNumThreads: threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
    // ONNX Runtime's threads otherwise spin on the cores for a while after each parallel
    // section and after the run, waiting for more work: the refinement and the PNG encode
    // that follow a pass then share the two cores with them (docs/benchmarks.md).
    extra: { session: { intra_op: { allow_spinning: '0' } } },
    // The arena keeps the memory of a pass for the next one: without it every large tensor is
    // fresh memory that the kernel must fault in and zero, each pass (docs/benchmarks.md).
    enableCpuMemArena: memoryArena,
    // Without the memory pattern each intermediate tensor is allocated when it is made and
    // freed when its last reader is done, so the arena holds what a pass needs at its peak,
    // not the sum of all its tensors.
    enableMemPattern: memoryPattern,
  });
  const inputName = session.inputNames[0];
  const outputName = session.outputNames.includes('output') ? 'output' : session.outputNames[0];
  const meta = session.inputMetadata[0];
  const shape = meta?.isTensor ? meta.shape : [];
  if (shape.length !== 4 || shape[1] !== 3 || typeof shape[2] !== 'number' || shape[2] !== shape[3]) {
    throw new Error(`${modelPath} does not look like an IS-Net model: input ${inputName} has shape [${shape.join(', ')}], expected [1, 3, S, S]`);
  }
  const size = shape[2];
  // The tensor of `rgb` runs, filled here for each: it never leaves this thread.
  let tensor: Float32Array | undefined;

  port.on('message', async ({ id, input, rgb }: RunRequest) => {
    try {
      const planar = rgb ? toModelTensor({ data: rgb, width: size, height: size, channels: 3 }, (tensor ??= new Float32Array(3 * size * size))) : input;
      const results = await session.run({ [inputName]: new ort.Tensor('float32', planar, [1, 3, size, size]) }, [outputName]);
      const output = results[outputName]?.data;
      if (!(output instanceof Float32Array) || output.length !== size * size) {
        throw new Error(`model output ${outputName} has ${output?.length} values, expected ${size * size}`);
      }
      if (rgb) {
        const { data: mask } = toMask(output, size);
        port.postMessage({ id, mask } satisfies RunResult, [mask.buffer as ArrayBuffer]);
        return;
      }
      port.postMessage({ id, output, input } satisfies RunResult, [output.buffer as ArrayBuffer, input.buffer as ArrayBuffer]);
    } catch (error) {
      port.postMessage({ id, error: error instanceof Error ? error.message : String(error) } satisfies RunResult);
    }
  });
  port.postMessage({ type: 'ready', size } satisfies WorkerReady);
} catch (error) {
  port.postMessage({ type: 'failed', message: error instanceof Error ? error.message : String(error) } satisfies WorkerFailed);
}
