/**
 * What each model costs a server here: for each one, a fresh process loads it through
 * Cutout's own segmenter (the server's session options, one instance), runs a warm-up and
 * N passes on one photo, and prints the process's RSS once loaded and warmed, its peak
 * (VmHWM), and the median pass (the tensor, the run and the mask, as a request's model step).
 * One model per process, so that one's memory does not count in another's.
 *
 *   npx tsx scripts/model-footprint.ts [--models isnet-fp32,isnet-int8,isnet-small] [--passes 5] [--threads 2] [--photo FILE]
 *
 * `isnet-fp32` and `isnet-int8` are the bundled model's two forms; any other name is a model
 * installed in CUTOUT_DATA_DIR (default ./data) with `cutout models add`. docs/benchmarks.md
 * ("Other models") records its figures.
 */
import { execFileSync } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { assembleModel } from '../src/model/assemble-model.js';
import { BUNDLED_RANGES, buildInt8Model } from '../src/model/int8-model.js';
import { resolveModel } from '../src/model/installed-models.js';
import { ISNET_PROCESSING } from '../src/model/model-processing.js';
import { loadSegmenter } from '../src/model/onnx-segmenter.js';
import { decodeForModel } from '../src/pipeline/decode.js';
import { readProcessMemory } from './lib/process-memory.js';
import { median } from './bench/stats.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const { values } = parseArgs({
  options: {
    models: { type: 'string', default: 'isnet-fp32,isnet-int8,isnet-small' },
    passes: { type: 'string', default: '5' },
    threads: { type: 'string', default: '2' },
    photo: { type: 'string', default: join(ROOT, '../shared/fixtures/photos/animal-3.jpg') },
    one: { type: 'string' },
  },
});
const dataDir = process.env.CUTOUT_DATA_DIR ?? './data';
const mib = (bytes: number) => (bytes / 2 ** 20).toFixed(0);

async function measureOne(name: string): Promise<void> {
  const fp32 = async () => assembleModel(dataDir);
  const { path, processing } =
    name === 'isnet-fp32'
      ? { path: await fp32(), processing: ISNET_PROCESSING }
      : name === 'isnet-int8'
        ? { path: await buildInt8Model(await fp32(), BUNDLED_RANGES, dataDir), processing: ISNET_PROCESSING }
        : await resolveModel(dataDir, name);
  const photo = await readFile(values.photo);
  const before = readProcessMemory(process.pid)!.rss;
  const started = performance.now();
  const segmenter = await loadSegmenter(path, { threads: Number(values.threads), processing });
  const picture = await decodeForModel(photo, { maxPixels: 1e9, size: processing.inputSize });
  await segmenter.segment([{ ...picture, data: picture.data.slice() }]);
  const loadMs = performance.now() - started;
  const loaded = readProcessMemory(process.pid)!;
  const passes: number[] = [];
  for (let i = 0; i < Number(values.passes); i++) {
    const data = picture.data.slice();
    const at = performance.now();
    await segmenter.segment([{ ...picture, data }]);
    passes.push(performance.now() - at);
  }
  const after = readProcessMemory(process.pid)!;
  await segmenter.close();
  console.log(
    `| ${name} | ${processing.inputSize} | ${mib(loaded.rss - before)} | ${mib(after.rss)} | ${mib(after.peak)} | ${(loadMs / 1000).toFixed(1)} | ${median(passes).toFixed(0)} (${passes.map((ms) => ms.toFixed(0)).join(', ')}) |`,
  );
}

if (values.one) await measureOne(values.one);
else {
  console.log(`photo ${values.photo}, ${values.threads} threads, ${values.passes} passes; one process per model`);
  console.log('\n| model | input | RSS added by load and warm-up (MiB) | RSS after the passes (MiB) | peak RSS (MiB) | load and warm-up (s) | median pass (ms; each) |');
  console.log('| --- | --- | --- | --- | --- | --- | --- |');
  for (const name of values.models.split(',')) {
    const args = ['--import', 'tsx', fileURLToPath(import.meta.url), '--one', name, '--passes', values.passes, '--threads', values.threads, '--photo', values.photo];
    process.stdout.write(execFileSync(process.execPath, args, { cwd: ROOT, env: process.env, encoding: 'utf8' }));
  }
}
