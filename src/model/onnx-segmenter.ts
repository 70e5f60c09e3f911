import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { wholeBuffer, type RawImage } from '../pipeline/raw-image.js';
import type { RunRequest, RunResult, SegmenterWorkerData, WorkerFailed, WorkerReady } from './segmenter-worker.js';

/**
 * A loaded segmentation model: takes a planar (NCHW) float tensor of `size × size` RGB
 * pixels, normalised as the model expects, and returns `size × size` foreground
 * probabilities in 0..1. Runs happen on worker threads, never on the event loop.
 */
export interface Segmenter {
  /** Side of the square input the model takes (1024 for IS-Net). */
  readonly size: number;
  /** Runs the model; the input is handed over, and the caller must not use it afterwards. */
  run(planarRgb: Float32Array): Promise<Float32Array>;
  /**
   * The whole model step on the model-sized RGB picture: the tensor is filled and the
   * probabilities made an 8-bit mask on the model's own thread, so the event loop neither
   * spends the time nor holds the 16 MB of floats. The picture's pixels are handed over.
   * Without it, `segment()` does the same around `run` on the calling thread.
   */
  segment?(modelInput: RawImage): Promise<RawImage>;
  /**
   * A buffer to fill with the next run's input: one that an earlier run handed back when
   * there is one, so that each pass does not take 12 MB of fresh memory (zeroed, and faulted
   * in page by page) for its tensor.
   */
  tensor?(): Float32Array;
  close(): Promise<void>;
}

export interface SegmenterOptions {
  /** Threads ONNX Runtime uses inside one run. */
  threads: number;
  /** Model sessions, each on its own worker thread: how many runs may go at once. Default 1. */
  instances?: number;
  /**
   * ONNX Runtime's CPU memory arena (CUTOUT_INFERENCE_MEMORY_ARENA). Default true: a pass is
   * about 17 % faster when its memory is reused instead of mapped afresh, and the process
   * keeps about 450 MB for it between passes (docs/benchmarks.md).
   */
  memoryArena?: boolean;
  /**
   * ONNX Runtime's memory pattern (one planned block for a run's intermediate tensors;
   * CUTOUT_INFERENCE_MEMORY_PATTERN). Default false: with the arena it made passes no faster
   * and the process's peak about 580 MB higher.
   */
  memoryPattern?: boolean;
}

interface Instance {
  worker: Worker;
  busy: boolean;
}

/**
 * Starts the worker module beside this one: compiled, a .js file; run from source (tests,
 * scripts under tsx or vitest), the .ts file, loaded through tsx's loader in the worker.
 */
function startWorker(workerData: SegmenterWorkerData): Worker {
  if (!import.meta.url.endsWith('.ts')) return new Worker(new URL('./segmenter-worker.js', import.meta.url), { workerData });
  const source = new URL('./segmenter-worker.ts', import.meta.url).href;
  const bootstrap = `import('tsx/esm/api').then(({ register }) => { register(); return import(${JSON.stringify(source)}); })`;
  return new Worker(bootstrap, { eval: true, workerData });
}

function startInstance(workerData: SegmenterWorkerData): Promise<{ worker: Worker; size: number }> {
  const worker = startWorker(workerData);
  return new Promise((resolve, reject) => {
    const onError = (error: Error) => reject(error);
    worker.once('error', onError);
    worker.once('message', (message: WorkerReady | WorkerFailed) => {
      worker.off('error', onError);
      if (message.type === 'ready') resolve({ worker, size: message.size });
      else void worker.terminate().then(() => reject(new Error(message.message)));
    });
  });
}

/**
 * Loads an IS-Net-family ONNX model on `instances` worker threads. The model must take one
 * `[1, 3, S, S]` float input and give `[1, 1, S, S]` as its first output (named `output` in
 * the bundled model); only that output is fetched, so the side outputs are not copied out.
 * `run` hands a call to an idle instance; the inference queue keeps at most `instances`
 * runs in flight, and extra calls wait here in order.
 *
 * @example const segmenter = await loadSegmenter(path, { threads: 2 })
 */
export async function loadSegmenter(modelPath: string, options: SegmenterOptions): Promise<Segmenter> {
  const threads = Math.max(1, Math.min(options.threads, availableParallelism() * 2));
  const started = await Promise.all(Array.from({ length: options.instances ?? 1 }, () => startInstance({ modelPath, threads, memoryArena: options.memoryArena ?? true, memoryPattern: options.memoryPattern ?? false })));
  const size = started[0].size;
  const instances: Instance[] = started.map(({ worker }) => ({ worker, busy: false }));
  const pending = new Map<number, { resolve: (result: RunResult) => void; reject: (error: Error) => void }>();
  // Input buffers the workers handed back, one per instance at most.
  const spare: Float32Array[] = [];
  const waiting: (() => void)[] = [];
  let nextId = 0;
  let closing = false;
  let drained: (() => void) | undefined;

  for (const instance of instances) {
    instance.worker.on('message', (result: RunResult) => {
      const call = pending.get(result.id);
      pending.delete(result.id);
      const { input } = result;
      if (input?.length === 3 * size * size && spare.length < instances.length) spare.push(input);
      if (result.error === undefined) call?.resolve(result);
      else call?.reject(new Error(`model run failed: ${result.error}`));
    });
    instance.worker.on('error', (error) => {
      for (const call of pending.values()) call.reject(error);
      pending.clear();
    });
  }

  const idle = async (): Promise<Instance> => {
    for (;;) {
      const free = instances.find((instance) => !instance.busy);
      if (free) return free;
      await new Promise<void>((resolve) => waiting.push(resolve));
    }
  };

  /** One run on an idle instance; the request's pixels are handed over, not copied. */
  const dispatch = async (request: RunRequest, pixels: ArrayBufferLike): Promise<RunResult> => {
    if (closing) throw new Error('the model is shutting down');
    const instance = await idle();
    instance.busy = true;
    try {
      return await new Promise<RunResult>((resolve, reject) => {
        pending.set(request.id, { resolve, reject });
        instance.worker.postMessage(request, [pixels as ArrayBuffer]);
      });
    } finally {
      instance.busy = false;
      waiting.shift()?.();
      if (closing && pending.size === 0) drained?.();
    }
  };

  return {
    size,
    tensor: () => spare.pop() ?? new Float32Array(3 * size * size),
    async run(planarRgb) {
      if (planarRgb.length !== 3 * size * size) throw new Error(`model input has ${planarRgb.length} values, expected ${3 * size * size}`);
      const { output } = await dispatch({ id: nextId++, input: planarRgb }, planarRgb.buffer);
      if (!output) throw new Error('model run answered no output');
      return output;
    },
    async segment(modelInput) {
      const { data, width, height, channels } = modelInput;
      if (width !== size || height !== size || channels !== 3) throw new Error(`segment needs ${size}×${size}×3, got ${width}×${height}×${channels}`);
      // A view into a larger buffer is copied out first: the whole buffer would travel otherwise.
      const rgb = wholeBuffer(data) ? data : data.slice();
      const { mask } = await dispatch({ id: nextId++, rgb }, rgb.buffer);
      if (!mask) throw new Error('model run answered no mask');
      return { data: mask, width: size, height: size, channels: 1 };
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
