import { availableParallelism } from 'node:os';
import type { Worker } from 'node:worker_threads';
import { wholeBuffer } from '../image/raw-image.js';
import { besideThisModule, startWorkerThread } from '../threads/start-worker-thread.js';
import { fromThreadError } from '../threads/thread-error.js';
import type { SegmenterReady, SegmenterRequest, SegmenterResult, SegmenterWorkerData } from './segmenter-protocol.js';
import { ISNET_PROCESSING, type ModelProcessing } from './model-processing.js';
import { disableOnnxRuntimeTelemetry } from './onnx-runtime-telemetry.js';
import { assertModelInput, type Segmenter } from './segmenter.js';

export interface SegmenterOptions {
  /** Threads ONNX Runtime uses inside one run. */
  threads: number;
  /** Model sessions, each on its own worker thread: how many runs may go at once. Default 1. */
  instances?: number;
  /**
   * ONNX Runtime's CPU memory arena (CUTOUT_INFERENCE_MEMORY_ARENA). Default true: a pass is
   * faster when its memory is reused instead of mapped afresh, and the process keeps that
   * memory between passes (docs/benchmarks.md has both figures).
   */
  memoryArena?: boolean;
  /**
   * ONNX Runtime's memory pattern (one planned block for a run's intermediate tensors;
   * CUTOUT_INFERENCE_MEMORY_PATTERN). Default false: with the arena it made passes no faster
   * and the process's peak higher (docs/benchmarks.md).
   */
  memoryPattern?: boolean;
  /** How the model takes its picture and gives its mask. Default: IS-Net's, the bundled model's. */
  processing?: ModelProcessing;
  /** CUTOUT_EXECUTION_PROVIDER. Default `cpu`. */
  executionProvider?: string;
}

/** The ONNX model behind a {@link Segmenter}, with one more way in for measuring it. */
export interface OnnxSegmenter extends Segmenter {
  /**
   * One pass on a ready planar (NCHW) float tensor, normalised as the model expects,
   * resolving with the `size × size` probabilities. Not the pipeline's way in (that is
   * `segment`): the benchmark times the bare pass with it, and tests compare model files.
   * The tensor is handed over.
   */
  runTensor(tensor: Float32Array): Promise<Float32Array>;
}

interface Instance {
  worker: Worker;
  busy: boolean;
}

/**
 * Loads an ONNX segmentation model on `instances` worker threads (`segmenter-worker.ts`), to
 * be run with `options.processing` (IS-Net's by default). The model must take one
 * `[1, 3, S, S]` float input (S the processing's input size when the file leaves it open) and
 * give `[1, C, S, S]` as the processing's output; only that output is fetched. A call goes to
 * an idle instance; the inference queue keeps at most `instances` runs in flight, and extra
 * calls (the warm-up, the benchmark) wait here in order.
 *
 * @example const segmenter = await loadSegmenter(path, { threads: 2 })
 */
export async function loadSegmenter(modelPath: string, options: SegmenterOptions): Promise<OnnxSegmenter> {
  const threads = Math.max(1, Math.min(options.threads, availableParallelism() * 2));
  const workerData: SegmenterWorkerData = {
    modelPath,
    threads,
    memoryArena: options.memoryArena ?? true,
    memoryPattern: options.memoryPattern ?? false,
    processing: options.processing ?? ISNET_PROCESSING,
    executionProvider: options.executionProvider ?? 'cpu',
  };
  disableOnnxRuntimeTelemetry();
  const module = besideThisModule(import.meta.url, 'segmenter-worker');
  const started = await Promise.all(Array.from({ length: options.instances ?? 1 }, () => startWorkerThread<SegmenterReady>(module, workerData)));
  const { size } = started[0].ready;
  const instances: Instance[] = started.map(({ worker }) => ({ worker, busy: false }));
  const pending = new Map<number, { resolve: (result: SegmenterResult) => void; reject: (error: Error) => void }>();
  const waiting: (() => void)[] = [];
  let nextId = 0;
  let closing = false;
  let drained: (() => void) | undefined;

  for (const instance of instances) {
    instance.worker.on('message', (result: SegmenterResult) => {
      const call = pending.get(result.id);
      pending.delete(result.id);
      if (result.error) call?.reject(new Error('model run failed', { cause: fromThreadError(result.error) }));
      else call?.resolve(result);
    });
    instance.worker.on('error', (error) => {
      for (const call of pending.values()) call.reject(error);
      pending.clear();
    });
  }

  /** An idle instance, marked busy in the same turn it is found, so that two calls made at once never share one. */
  const acquire = async (): Promise<Instance> => {
    for (;;) {
      const free = instances.find((instance) => !instance.busy);
      if (free) {
        free.busy = true;
        return free;
      }
      await new Promise<void>((resolve) => waiting.push(resolve));
    }
  };

  /** One run on an idle instance; the request's pixels are handed over, not copied. */
  const dispatch = async (request: SegmenterRequest, moved: ArrayBufferLike[]): Promise<SegmenterResult> => {
    if (closing) throw new Error('the model is shutting down');
    const instance = await acquire();
    try {
      return await new Promise<SegmenterResult>((resolve, reject) => {
        pending.set(request.id, { resolve, reject });
        instance.worker.postMessage(request, moved as ArrayBuffer[]);
      });
    } finally {
      instance.busy = false;
      waiting.shift()?.();
      if (closing && pending.size === 0) drained?.();
    }
  };

  return {
    size,
    fit: options.processing?.fit ?? 'stretch',
    async segment(pictures, aspect) {
      if (pictures.length === 0) throw new Error('segment needs at least one picture');
      for (const picture of pictures) assertModelInput(picture, size);
      // A view into a larger buffer is copied out first: the whole buffer would travel otherwise.
      const rgb = pictures.map(({ data }) => (wholeBuffer(data) ? data : data.slice()));
      const { masks } = await dispatch({ id: nextId++, rgb, aspect }, [...new Set(rgb.map((data) => data.buffer))]);
      if (masks?.length !== pictures.length) throw new Error(`model run answered ${masks?.length ?? 'no'} masks for ${pictures.length} pictures`);
      return masks.map((data) => ({ data, width: size, height: size, channels: 1 as const }));
    },
    async runTensor(tensor) {
      if (tensor.length !== 3 * size * size) throw new Error(`model input has ${tensor.length} values, expected ${3 * size * size}`);
      const { probabilities } = await dispatch({ id: nextId++, tensor }, [tensor.buffer]);
      if (!probabilities) throw new Error('model run answered no probabilities');
      return probabilities;
    },
    /**
     * Refuses new runs, waits for those in progress (terminating a worker inside a native
     * run aborts the whole process), then stops the workers.
     */
    async close() {
      closing = true;
      if (pending.size > 0) await new Promise<void>((resolve) => (drained = resolve));
      await Promise.all(instances.map((instance) => instance.worker.terminate()));
    },
  };
}
