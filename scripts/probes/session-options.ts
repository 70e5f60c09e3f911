/**
 * One model pass under given ONNX Runtime session options, in a process of its own: prints
 * the median of four passes after a warm-up, the process's peak memory (VmHWM) and its RSS
 * afterwards. Run it under different glibc malloc variables to compare allocators:
 *
 *   npx tsx scripts/probes/session-options.ts '{"enableCpuMemArena":false,"enableMemPattern":false}'
 *   MALLOC_ARENA_MAX=2 MALLOC_MMAP_THRESHOLD_=4194304 npx tsx scripts/probes/session-options.ts '{…}'
 *
 * The server's own options are in src/model/segmenter-worker.ts; docs/internals/performance.md ("How the
 * figures were reached") records what this printed. A random input: the pass's cost does
 * not depend on the pixels.
 */
import { readFileSync } from 'node:fs';
import * as ort from 'onnxruntime-node';
import { assembleModel } from '../../src/model/assemble-model.js';
import { disableOnnxRuntimeTelemetry } from '../../src/model/onnx-runtime-telemetry.js';

disableOnnxRuntimeTelemetry();

const options = JSON.parse(process.argv[2] ?? '{}') as ort.InferenceSession.SessionOptions;
const modelPath = process.env.CUTOUT_MODEL_PATH ?? (await assembleModel('./data'));
const session = await ort.InferenceSession.create(modelPath, { intraOpNumThreads: 2, interOpNumThreads: 1, executionMode: 'sequential', graphOptimizationLevel: 'all', ...options });
const input = new Float32Array(3 * 1024 * 1024).map(() => Math.random() - 0.5);
const feeds = { [session.inputNames[0]]: new ort.Tensor('float32', input, [1, 3, 1024, 1024]) };
await session.run(feeds);
const passes: number[] = [];
for (let i = 0; i < 4; i++) {
  const start = performance.now();
  await session.run(feeds);
  passes.push(performance.now() - start);
}
const status = readFileSync('/proc/self/status', 'utf8');
const mib = (field: string) => (Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1]) / 1024).toFixed(0);
const malloc = Object.entries(process.env).filter(([name]) => name.startsWith('MALLOC_')).map(([name, value]) => `${name}=${value}`).join(' ') || 'glibc defaults';
console.log(`${JSON.stringify(options)} with ${malloc}: pass median ${passes.sort((a, b) => a - b)[2].toFixed(0)} ms (${passes.map((p) => p.toFixed(0)).join(', ')}), peak ${mib('VmHWM')} MiB, RSS after ${mib('VmRSS')} MiB`);
