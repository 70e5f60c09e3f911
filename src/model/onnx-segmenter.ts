import { availableParallelism } from 'node:os';
import type { Worker } from 'node:worker_threads';
import { CutoutError } from '../errors.js';
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
   * memory between passes (docs/internals/performance.md has both figures).
   */
  memoryArena?: boolean;
  /**
   * ONNX Runtime's memory pattern (one planned block for a run's intermediate tensors;
   * CUTOUT_INFERENCE_MEMORY_PATTERN). Default false: with the arena it made passes no faster
   * and the process's peak higher (docs/internals/performance.md).
   */
  memoryPattern?: boolean;
  /** How the model takes its picture and gives its mask. Default: IS-Net's, the bundled model's. */
  processing?: ModelProcessing;
  /** CUTOUT_EXECUTION_PROVIDER (a resolved one, not `auto`). Default `cpu`. */
  executionProvider?: string;
  /**
   * On a provider other than the CPU, a run that has not answered after this many ms is taken
   * for a lost device (setStallLimit changes it once a pass has been timed). Default: none.
   */
  stallLimitMs?: number;
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
  /** Sets the stall limit (SegmenterOptions.stallLimitMs) for the runs dispatched from now on. */
  setStallLimit(ms: number): void;
}

/** How long close waits for a run the model gave up on to leave its worker before stopping it anyway. */
const FAILED_RUN_WAIT_MS = 60_000;

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
  // Runs posted to a worker and not answered yet, given up or not: a worker is stopped only
  // once its native run is over (see close).
  const inWorker = new Set<number>();
  let workersIdle: (() => void) | undefined;
  const provider = workerData.executionProvider;
  let stallLimitMs = options.stallLimitMs ?? Infinity;
  let failure: CutoutError | undefined;
  /**
   * The model can run no more: its thread died, or (off the CPU) a run failed or stalled, which
   * on a GPU means the device is lost or hung; a session does not come back from either. Every
   * run waiting for an answer and every later one fails with a 503 at once rather than hang.
   */
  const fail = (cause: Error) => {
    if (failure) return;
    failure = new CutoutError('not_ready', `The model cannot run on ${provider} any more (${cause.message}); this server must be restarted.`, { cause });
    for (const call of pending.values()) call.reject(failure);
    pending.clear();
  };

  for (const instance of instances) {
    instance.worker.on('message', (result: SegmenterResult) => {
      inWorker.delete(result.id);
      if (inWorker.size === 0) workersIdle?.();
      const call = pending.get(result.id);
      // Every input has the model's fixed shape: a run that fails off the CPU is the device's
      // failure, not the photo's (fail rejects this call with the others).
      if (result.error && provider !== 'cpu') return fail(fromThreadError(result.error));
      pending.delete(result.id);
      if (result.error) call?.reject(new Error('model run failed', { cause: fromThreadError(result.error) }));
      else call?.resolve(result);
    });
    instance.worker.on('error', (error) => fail(error));
    instance.worker.on('exit', (code) => {
      if (!closing) fail(new Error(`its thread stopped (exit code ${code})`));
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
    if (failure) throw failure;
    const instance = await acquire();
    let stalled: NodeJS.Timeout | undefined;
    try {
      if (failure) throw failure;
      return await new Promise<SegmenterResult>((resolve, reject) => {
        pending.set(request.id, { resolve, reject });
        inWorker.add(request.id);
        instance.worker.postMessage(request, moved as ArrayBuffer[]);
        if (provider !== 'cpu' && Number.isFinite(stallLimitMs)) {
          const limit = stallLimitMs;
          stalled = setTimeout(() => fail(new Error(`a pass has not answered after ${Math.round(limit)} ms`)), limit);
        }
      });
    } finally {
      clearTimeout(stalled);
      instance.busy = false;
      waiting.shift()?.();
      if (closing && pending.size === 0) drained?.();
    }
  };

  return {
    size,
    fit: options.processing?.fit ?? 'stretch',
    get failure() {
      return failure;
    },
    setStallLimit(ms) {
      stallLimitMs = ms;
    },
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
      if (pending.size > 0 && !failure) await new Promise<void>((resolve) => (drained = resolve));
      // A failed model's runs were given up, but one may still be inside the native run (a slow
      // device rather than a lost one): wait for it a while; a hung device's never ends.
      if (failure && inWorker.size > 0) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, FAILED_RUN_WAIT_MS);
          workersIdle = () => (clearTimeout(timer), resolve());
        });
      }
      await Promise.all(instances.map((instance) => instance.worker.terminate()));
    },
  };
}
