/**
 * The worker thread behind one {@link Segmenter} instance, and the only module that imports
 * onnxruntime-node. ONNX Runtime's Node binding runs a model synchronously on the thread
 * that calls it (its `run` only defers the call with setImmediate), so running it on the
 * main thread would freeze every other request for the length of a pass.
 *
 * It also fills the model's tensor from the picture and turns the chosen output into the
 * 8-bit mask, as the model's processing says (`model-tensor.ts`), so the
 * event loop never holds the 16 MB of floats. It checks the execution provider before it
 * loads the model (`execution-provider.ts`). The
 * messages are `segmenter-protocol.ts`'s. Started with {@link ProbeWorkerData} instead, it
 * times the precision probe (quantize/probe-models.ts), reports the timings as its ready
 * message, and has nothing more to do.
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { parentPort, workerData, type MessagePort } from 'node:worker_threads';
import * as ort from 'onnxruntime-node';
import { reportFailed, reportReady } from '../threads/start-worker-thread.js';
import { toThreadError } from '../threads/thread-error.js';
import { assertProviderAvailable, providerRefused } from './execution-provider.js';
import { letterboxBox, letterboxPicture, unletterboxProbabilities } from './letterbox.js';
import { channelTables, toMask, toModelTensor, toProbabilities } from './model-tensor.js';
import { probeInput, probeModels, PROBE_CHANNELS, PROBE_SIZE } from './quantize/probe-models.js';
import type { ProbeResult, ProbeWorkerData, SegmenterReady, SegmenterRequest, SegmenterResult, SegmenterWorkerData } from './segmenter-protocol.js';
import { gpuHint } from './vulkan-drivers.js';

if (!parentPort) throw new Error('segmenter-worker must run as a worker thread');
const port: MessagePort = parentPort;

/** The session settings of every model this thread runs, the server's and the probe's. */
function sessionOptions({ threads, memoryArena = true, memoryPattern = false }: { threads: number; memoryArena?: boolean; memoryPattern?: boolean }): ort.InferenceSession.SessionOptions {
  return {
    intraOpNumThreads: threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
    // ONNX Runtime's threads otherwise spin on the cores for a while after each parallel
    // section and after the run, waiting for more work: the refinement and the PNG encode
    // that follow a pass then share the two cores with them (docs/internals/performance.md).
    extra: { session: { intra_op: { allow_spinning: '0' } } },
    // The arena keeps the memory of a pass for the next one: without it every large tensor is
    // fresh memory that the kernel must fault in and zero, each pass (docs/internals/performance.md).
    enableCpuMemArena: memoryArena,
    // Without the memory pattern each intermediate tensor is allocated when it is made and
    // freed when its last reader is done, so the arena holds what a pass needs at its peak,
    // not the sum of all its tensors.
    enableMemPattern: memoryPattern,
  };
}

/** Times the probe's float32 and int8 models alternately, with the server's session settings. */
async function timeProbe({ threads, runs }: ProbeWorkerData): Promise<ProbeResult> {
  const { fp32, int8 } = probeModels();
  const options = sessionOptions({ threads });
  const sessions = [await ort.InferenceSession.create(fp32, options), await ort.InferenceSession.create(int8, options)];
  try {
    const x = new ort.Tensor('float32', probeInput(), [1, PROBE_CHANNELS, PROBE_SIZE, PROBE_SIZE]);
    const times: number[][] = [[], []];
    const outputs: Float32Array[] = [];
    for (let run = 0; run <= runs; run++) {
      for (const [i, session] of sessions.entries()) {
        const started = performance.now();
        outputs[i] = (await session.run({ x })).y.data as Float32Array;
        if (run > 0) times[i].push(performance.now() - started);
      }
    }
    let maxDifference = 0;
    for (let i = 0; i < outputs[0].length; i++) maxDifference = Math.max(maxDifference, Math.abs(outputs[0][i] - outputs[1][i]));
    return { fp32Ms: times[0], int8Ms: times[1], maxDifference };
  } finally {
    await Promise.all(sessions.map((session) => session.release()));
  }
}

const data = workerData as SegmenterWorkerData | ProbeWorkerData;
if ('probe' in data) {
  try {
    reportReady<ProbeResult>(await timeProbe(data));
  } catch (error) {
    reportFailed(error);
  }
} else await serve(data);

/** The folder of onnxruntime-node's native binding, where provider libraries are installed beside it. */
function bindingDir(): string {
  return join(dirname(createRequire(import.meta.url).resolve('onnxruntime-node')), '..', 'bin', 'napi-v6', process.platform, process.arch);
}

async function serve({ modelPath, threads, memoryArena, memoryPattern, processing, executionProvider }: SegmenterWorkerData): Promise<void> {
  try {
    assertProviderAvailable(executionProvider, ort.listSupportedBackends(), bindingDir(), existsSync);
    const options = { ...sessionOptions({ threads, memoryArena, memoryPattern }), executionProviders: [executionProvider] };
    const session = await ort.InferenceSession.create(modelPath, options).catch((error: unknown) => {
      throw executionProvider === 'cpu' ? error : providerRefused(executionProvider, error, executionProvider === 'webgpu' ? gpuHint().summary : undefined);
    });
    const inputName = session.inputNames[0];
    const outputName = session.outputNames[processing.outputIndex];
    if (outputName === undefined) throw new Error(`${modelPath} has ${session.outputNames.length} outputs; its processing reads output ${processing.outputIndex}`);
    const meta = session.inputMetadata[0];
    const shape = meta?.isTensor ? meta.shape : [];
    // A side the file leaves open (a symbolic dimension) is the processing's.
    const side = (dim: number | string | undefined) => (typeof dim === 'number' && dim > 0 ? dim : processing.inputSize);
    if (shape.length !== 4 || shape[1] !== 3 || side(shape[2]) !== processing.inputSize || side(shape[3]) !== processing.inputSize) {
      throw new Error(`${modelPath} has input ${inputName} of shape [${shape.join(', ')}], expected [1, 3, ${processing.inputSize}, ${processing.inputSize}] (its input size)`);
    }
    const size = processing.inputSize;
    const tables = channelTables(processing);
    // The tensor of `rgb` runs, filled here for each: it never leaves this thread.
    let tensor: Float32Array | undefined;

    /** Where the photo lies in a letterboxed square; none when it fills the square anyway. */
    const letterboxFor = (aspect = 1) => {
      const box = letterboxBox(size, aspect);
      return box.width === size && box.height === size ? undefined : box;
    };

    /** One pass on a filled tensor: the model's `size × size` probabilities, read from its output as the processing says. */
    const run = async (planar: Float32Array): Promise<Float32Array> => {
      const results = await session.run({ [inputName]: new ort.Tensor('float32', planar, [1, 3, size, size]) }, [outputName]);
      const output = results[outputName];
      if (!(output?.data instanceof Float32Array)) throw new Error(`model output ${outputName} is not float32`);
      return toProbabilities(output.data, output.dims, size, processing, outputName);
    };

    port.on('message', async ({ id, rgb, aspect, tensor: given }: SegmenterRequest) => {
      try {
        if (given) {
          const probabilities = await run(given);
          port.postMessage({ id, probabilities } satisfies SegmenterResult, [probabilities.buffer as ArrayBuffer]);
          return;
        }
        // The views run one after the other through the one tensor: a second view costs a
        // second pass, not a second pass's worth of memory.
        const box = processing.fit === 'letterbox' ? letterboxFor(aspect) : undefined;
        const masks: Uint8Array[] = [];
        for (const data of rgb) {
          const picture = box ? letterboxPicture(data, size, box) : data;
          const planar = toModelTensor({ data: picture, width: size, height: size, channels: 3 }, tables, (tensor ??= new Float32Array(3 * size * size)));
          const probabilities = await run(planar);
          masks.push(toMask(box ? unletterboxProbabilities(probabilities, size, box) : probabilities, size).data);
        }
        port.postMessage({ id, masks } satisfies SegmenterResult, masks.map((mask) => mask.buffer as ArrayBuffer));
      } catch (error) {
        port.postMessage({ id, error: toThreadError(error) } satisfies SegmenterResult);
      }
    });
    reportReady<SegmenterReady>({ size });
  } catch (error) {
    reportFailed(error);
  }
}
