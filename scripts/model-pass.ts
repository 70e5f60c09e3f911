/**
 * The model pass in float32 against int8, in one process, alternated: the int8 model's speed
 * target (int8 ≤ 0.33 × float32) and the per-block profile (bench/results/history-benchmarks.md).
 *
 *   npm run model-pass -- [--rounds N] [--threads N] [--photo FILE] [--ranges FILE] [--profile N]
 *
 * Both models go through Cutout's own segmenter (the server's session options); each round
 * runs one float32 pass and one int8 pass, the order swapped every round, on the same photo's
 * tensor, so that a shared machine's slow spells hit both alike. Printed: each round's pair
 * and ratio, the medians, the model files' sizes and load times, and how far the int8 mask
 * is from the float32 one on that photo. `--profile N` adds N profiled passes of each,
 * summed per block and per kernel kind (scripts/model-pass/profile.ts).
 */
import { readFile, stat } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { assembleModel } from '../src/model/assemble-model.js';
import { BUNDLED_RANGES, buildInt8Model } from '../src/model/int8-model.js';
import { loadSegmenter, type OnnxSegmenter } from '../src/model/onnx-segmenter.js';
import { readInt8Ranges } from '../src/model/quantize/int8-ranges.js';
import { decodeForModel } from '../src/pipeline/decode.js';
import { ISNET_PROCESSING } from '../src/model/model-processing.js';
import { channelTables, toModelTensor } from '../src/model/model-tensor.js';
import { describeMachine } from './bench/machine.js';
import { median } from './bench/stats.js';
import { profilePasses, type PassProfile } from './model-pass/profile.js';

const PHOTO = resolve(dirname(fileURLToPath(import.meta.url)), '../../shared/fixtures/photos/animal-3.jpg');

async function timed<T>(work: () => Promise<T>): Promise<[T, number]> {
  const started = performance.now();
  const result = await work();
  return [result, performance.now() - started];
}

function printProfiles(fp32: PassProfile, int8: PassProfile): void {
  const row = (name: string, a = 0, b = 0) => `| ${name} | ${a.toFixed(1)} | ${b.toFixed(1)} | ${a > 0 ? (b / a).toFixed(2) : '–'} |`;
  console.log('\n#### Per block (ms per pass, kernels only)\n\n| block | float32 | int8 | int8 ÷ float32 |\n| --- | --- | --- | --- |');
  const blocks = [...new Set([...fp32.blocks.keys(), ...int8.blocks.keys()])];
  for (const block of blocks) console.log(row(block, fp32.blocks.get(block), int8.blocks.get(block)));
  console.log(row('**all kernels**', fp32.total, int8.total));
  for (const [name, profile] of [['float32', fp32], ['int8', int8]] as const) {
    console.log(`\n#### Kernels of the ${name} pass (ms per pass)\n\n| kernel | ms | share |\n| --- | --- | --- |`);
    for (const [op, ms] of [...profile.ops].sort((a, b) => b[1] - a[1])) console.log(`| ${op} | ${ms.toFixed(1)} | ${((100 * ms) / profile.total).toFixed(1)} % |`);
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { rounds: { type: 'string', default: '8' }, threads: { type: 'string', default: '2' }, photo: { type: 'string', default: PHOTO }, ranges: { type: 'string' }, profile: { type: 'string', default: '0' } },
  });
  const threads = Number(values.threads);
  const dataDir = process.env.CUTOUT_DATA_DIR ?? './data';
  const fp32Path = await assembleModel(dataDir);
  const ranges = values.ranges ? await readInt8Ranges(values.ranges) : BUNDLED_RANGES;
  const [int8Path, buildMs] = await timed(() => buildInt8Model(fp32Path, ranges, dataDir));
  const size = 1024;
  const tensor = toModelTensor(await decodeForModel(await readFile(values.photo), { maxPixels: 1e9, size }), channelTables(ISNET_PROCESSING));

  const machine = describeMachine();
  console.log(`machine: ${machine.cpu}, ${machine.cores} cores; Node ${machine.node}; load average ${machine.loadAverage.join(' / ')}`);
  console.log(`photo: ${values.photo}; ${threads} threads; ${values.rounds} rounds`);
  const [fp32, fp32LoadMs] = await timed(() => loadSegmenter(fp32Path, { threads }));
  const [int8, int8LoadMs] = await timed(() => loadSegmenter(int8Path, { threads }));
  const sizeOf = async (path: string) => ((await stat(path)).size / 1e6).toFixed(1);
  console.log(`float32: ${fp32Path}, ${await sizeOf(fp32Path)} MB, loaded in ${fp32LoadMs.toFixed(0)} ms`);
  console.log(`int8:    ${int8Path}, ${await sizeOf(int8Path)} MB, loaded in ${int8LoadMs.toFixed(0)} ms (built or found in ${buildMs.toFixed(0)} ms)`);

  const pass = async (segmenter: OnnxSegmenter) => timed(() => segmenter.runTensor(tensor.slice()));
  const [[a], [b]] = [await pass(fp32), await pass(int8)]; // warm-up, and the two masks compared
  let sum = 0;
  let worst = 0;
  for (let i = 0; i < a.length; i++) {
    const difference = Math.abs(a[i] - b[i]);
    sum += difference;
    worst = Math.max(worst, difference);
  }
  console.log(`mask, int8 against float32 on this photo: mean |Δ| ${(sum / a.length).toFixed(4)}, max |Δ| ${worst.toFixed(3)}`);

  const rows: [number, number][] = [];
  console.log('\n| round | float32 (ms) | int8 (ms) | int8 ÷ float32 |\n| --- | --- | --- | --- |');
  for (let round = 0; round < Number(values.rounds); round++) {
    let fp32Ms: number;
    let int8Ms: number;
    if (round % 2 === 0) [[, fp32Ms], [, int8Ms]] = [await pass(fp32), await pass(int8)];
    else [[, int8Ms], [, fp32Ms]] = [await pass(int8), await pass(fp32)];
    rows.push([fp32Ms, int8Ms]);
    console.log(`| ${round + 1} | ${fp32Ms.toFixed(0)} | ${int8Ms.toFixed(0)} | ${(int8Ms / fp32Ms).toFixed(3)} |`);
  }
  await Promise.all([fp32.close(), int8.close()]);
  const [fp32Median, int8Median] = [median(rows.map((r) => r[0])), median(rows.map((r) => r[1]))];
  console.log(`| **median** | **${fp32Median.toFixed(0)}** | **${int8Median.toFixed(0)}** | **${(int8Median / fp32Median).toFixed(3)}** (median of the rounds' ratios ${median(rows.map((r) => r[1] / r[0])).toFixed(3)}) |`);

  const profiled = Number(values.profile);
  if (profiled > 0) printProfiles(await profilePasses(fp32Path, tensor, size, threads, profiled), await profilePasses(int8Path, tensor, size, threads, profiled));
}

await main();
