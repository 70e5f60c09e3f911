/**
 * Where a model pass spends its time, per IS-Net block (conv_in, stage1 … stage6, stage5d …
 * stage1d, side1) and per kind of kernel, from ONNX Runtime's own profiler. The profiler
 * names each kernel after its node, and a node that the runtime made by fusing (QLinearConv
 * from DequantizeLinear → Conv → QuantizeLinear) gets a made-up name, so nodes are placed in
 * blocks by the tensors they write, read back from the optimized graph the session saves.
 */
import { readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { openModel } from '../../src/model/quantize/onnx-graph.js';
import { disableOnnxRuntimeTelemetry } from '../../src/model/onnx-runtime-telemetry.js';

disableOnnxRuntimeTelemetry();

interface ProfileEvent {
  cat: string;
  name: string;
  dur: number;
  args?: { op_name?: string };
}

/** Mean milliseconds per pass, per block and per kernel kind. */
export interface PassProfile {
  blocks: Map<string, number>;
  ops: Map<string, number>;
  total: number;
}

/**
 * The block a node belongs to, from its name (`/stage1/rebnconv1/conv_s1/Conv` → stage1) or,
 * for a node the runtime made, from the tensor it writes; the upsampling between decoder
 * stages, the input's quantization and the last Resize and Sigmoid → "between blocks".
 */
export function blockOf(name: string, output: string): string {
  for (const candidate of [name, output.replace(/\/(quantized|dequantized\/\d+)$/, '')]) {
    const block = /^\/([a-z0-9_]+)\/./i.exec(candidate)?.[1];
    if (block && !/^(Resize|Concat|Constant|Shape|Slice)/.test(block)) return block;
  }
  return 'between blocks';
}

/**
 * Runs `passes` passes of the model at `path` on `input` with profiling on, with the
 * server's session settings and `threads` threads, and sums the kernels' times.
 */
export async function profilePasses(path: string, input: Float32Array, size: number, threads: number, passes: number): Promise<PassProfile> {
  const dir = tmpdir();
  const stamp = `cutout-profile-${process.pid}-${Date.now()}`;
  const optimized = join(dir, `${stamp}.onnx`);
  const session = await ort.InferenceSession.create(path, {
    intraOpNumThreads: threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
    extra: { session: { intra_op: { allow_spinning: '0' } } },
    enableProfiling: true,
    profileFilePrefix: join(dir, stamp),
    optimizedModelFilePath: optimized,
  });
  const feeds = { [session.inputNames[0]]: new ort.Tensor('float32', input, [1, 3, size, size]) };
  await session.run(feeds); // warm-up, left out below
  for (let i = 0; i < passes; i++) await session.run(feeds);
  session.endProfiling();
  await session.release();

  const graph = openModel(await readFile(optimized));
  const blockOfNode = new Map(graph.nodes.map((node) => [node.name, blockOf(node.name, node.outputs[0] ?? '')]));
  const profileFile = (await readdir(dir)).find((name) => name.startsWith(stamp) && name.endsWith('.json'));
  if (!profileFile) throw new Error(`ONNX Runtime wrote no profile in ${dir}`);
  const events = JSON.parse(await readFile(join(dir, profileFile), 'utf8')) as ProfileEvent[];
  await Promise.all([rm(optimized, { force: true }), rm(join(dir, profileFile), { force: true })]);

  const kernels = events.filter((event) => event.cat === 'Node' && event.name.endsWith('_kernel_time'));
  const runs = passes + 1;
  // The first pass's kernels are the warm-up: skip them (each pass runs every kernel once).
  const perPass = kernels.length / runs;
  const timed = kernels.slice(perPass);
  const profile: PassProfile = { blocks: new Map(), ops: new Map(), total: 0 };
  for (const event of timed) {
    const ms = event.dur / 1000 / passes;
    const node = event.name.slice(0, -'_kernel_time'.length);
    const block = blockOfNode.get(node) ?? blockOf(node, '');
    const op = event.args?.op_name ?? '?';
    profile.blocks.set(block, (profile.blocks.get(block) ?? 0) + ms);
    profile.ops.set(op, (profile.ops.get(op) ?? 0) + ms);
    profile.total += ms;
  }
  return profile;
}
