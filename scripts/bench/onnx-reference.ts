import * as ort from 'onnxruntime-node';
import { loadSegmenter, type SegmenterOptions } from '../../src/model/onnx-segmenter.js';
import { encodeModel, encodeNode, encodeValueInfo, withExtraOutputs } from './onnx-protobuf.js';
import { median } from './stats.js';
import { disableOnnxRuntimeTelemetry } from '../../src/model/onnx-runtime-telemetry.js';

disableOnnxRuntimeTelemetry();

// The benchmark's own door to onnxruntime-node: the model's floor goes through Cutout's
// segmenter (the server's exact session options); the GEMM reference and the shape check
// need sessions on models the segmenter would refuse.

/** Timed runs of one thing, in ms. */
export interface Timed {
  samples: number[];
  median: number;
}

/** A loaded model that times one bare pass at a time. */
export interface FloorMeter {
  /** One model pass on the prepared tensor; its duration in ms. */
  pass(): Promise<number>;
  close(): Promise<void>;
}

/**
 * The model pass alone: Cutout's segmenter (same session options and thread count as the
 * server) on a real picture's tensor, in this process, timed while the server is idle. This
 * is the floor end-to-end latency is compared with. Passes can be interleaved with HTTP
 * requests, so both see the same state of a shared machine.
 */
export async function openFloorMeter(modelPath: string, tensor: Float32Array, options: SegmenterOptions): Promise<FloorMeter> {
  const segmenter = await loadSegmenter(modelPath, options);
  return {
    async pass() {
      // A segmenter may take its input over (transfer to a worker thread): a fresh copy each pass.
      const input = tensor.slice();
      const start = performance.now();
      await segmenter.runTensor(input);
      return performance.now() - start;
    },
    close: () => segmenter.close(),
  };
}

/** `warmup` untimed passes, then `runs` timed ones. */
export async function measurePasses(meter: FloorMeter, options: { warmup: number; runs: number }): Promise<Timed> {
  for (let i = 0; i < options.warmup; i++) await meter.pass();
  const samples: number[] = [];
  for (let i = 0; i < options.runs; i++) samples.push(await meter.pass());
  return { samples, median: median(samples) };
}

/** What ONNX Runtime reaches on one large float32 matrix product on this machine. */
export interface MatMulReference extends Timed {
  n: number;
  /** 2·n³ floating-point operations per product. */
  gflop: number;
  gflops: number;
}

/**
 * Times one `n×n · n×n` float32 MatMul in a one-node ONNX model built in memory, with the
 * server's session options: the practical ceiling of ONNX Runtime's GEMM at `threads`.
 */
export async function measureMatMul(options: { n: number; threads: number; warmup: number; runs: number }): Promise<MatMulReference> {
  const { n } = options;
  const model = encodeModel({
    nodes: [encodeNode('MatMul', ['A', 'B'], ['C'])],
    inputs: [encodeValueInfo('A', [n, n]), encodeValueInfo('B', [n, n])],
    outputs: [encodeValueInfo('C', [n, n])],
  });
  const session = await ort.InferenceSession.create(model, {
    intraOpNumThreads: options.threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
  });
  try {
    const random = () => Float32Array.from({ length: n * n }, () => Math.random() - 0.5);
    const feeds = { A: new ort.Tensor('float32', random(), [n, n]), B: new ort.Tensor('float32', random(), [n, n]) };
    for (let i = 0; i < options.warmup; i++) await session.run(feeds);
    const samples: number[] = [];
    for (let i = 0; i < options.runs; i++) {
      const start = performance.now();
      await session.run(feeds);
      samples.push(performance.now() - start);
    }
    const gflop = (2 * n ** 3) / 1e9;
    const ms = median(samples);
    return { n, gflop, samples, median: ms, gflops: gflop / (ms / 1000) };
  } finally {
    await session.release();
  }
}

/**
 * Runs the model once with the named intermediate tensors added as graph outputs and returns
 * their shapes as ONNX Runtime computed them (the check on the exporter's recorded shapes).
 */
export async function measureTensorShapes(modelBytes: Uint8Array, names: string[], inputShape: number[]): Promise<Map<string, number[]>> {
  const session = await ort.InferenceSession.create(withExtraOutputs(modelBytes, names), { intraOpNumThreads: 2, graphOptimizationLevel: 'basic' });
  try {
    const size = inputShape.reduce((a, b) => a * b, 1);
    const results = await session.run({ [session.inputNames[0]]: new ort.Tensor('float32', new Float32Array(size), inputShape) }, names);
    return new Map(names.map((name) => [name, [...(results[name]?.dims ?? [])]]));
  } finally {
    await session.release();
  }
}
