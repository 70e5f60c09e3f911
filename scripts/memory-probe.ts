/**
 * How high a fresh server's memory goes under one burst of large requests: compiles and
 * starts the server as `npm run bench` does (same environment, start script's malloc
 * variables included), sends CLIENTS closed-loop clients ROUNDS requests each of one photo
 * scaled to MEGAPIXELS, and prints the server's RSS once ready, its peak (VmHWM, reset
 * before the burst) and RSS every half second. A few minutes instead of the bench's 16.
 *
 *   npx tsx scripts/memory-probe.ts [--clients 16] [--rounds 1] [--megapixels 10.7] [--photo FILE]
 *
 * bench/results/history-benchmarks.md records its figures.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { requestRemoval } from './bench/http-load.js';
import { makeBenchImages } from './bench/inputs.js';
import { compileServer, startCutoutServer } from './lib/server-process.js';
import { memoryMiB } from './lib/process-memory.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const { values } = parseArgs({
  options: {
    clients: { type: 'string', default: '16' },
    rounds: { type: 'string', default: '1' },
    megapixels: { type: 'string', default: '10.7' },
    photo: { type: 'string', default: join(ROOT, '../shared/fixtures/photos/animal-3.jpg') },
  },
});
const clients = Number(values.clients);
const rounds = Number(values.rounds);
const megapixels = Number(values.megapixels);
if (!(clients >= 1 && rounds >= 1 && megapixels > 0)) {
  console.error('usage: npx tsx scripts/memory-probe.ts [--clients 16] [--rounds 1] [--megapixels 10.7] [--photo FILE]');
  process.exit(2);
}

const work = await mkdtemp(join(tmpdir(), 'cutout-memory-'));
const buildDir = join(ROOT, 'bench/.build');
await compileServer(ROOT, buildDir);
const [image] = await makeBenchImages(values.photo, [megapixels], work);
const server = await startCutoutServer({ root: ROOT, buildDir, dataDir: join(work, 'data'), modelsDir: join(ROOT, 'data/models'), threads: Number(process.env.CUTOUT_INFERENCE_THREADS) || availableParallelism() });
const mib = (field: 'VmRSS' | 'VmHWM') => memoryMiB(server.pid, field);
try {
  console.log(`server ready: RSS ${(await mib('VmRSS')).toFixed(0)} MiB`);
  await writeFile(`/proc/${server.pid}/clear_refs`, '5'); // resets VmHWM to the current RSS
  const started = performance.now();
  const seconds = () => ((performance.now() - started) / 1000).toFixed(1);
  const series: string[] = [];
  const sampler = setInterval(() => void mib('VmRSS').then((rss) => series.push(`${seconds()} s ${rss.toFixed(0)}`)), 500);
  const answers = await Promise.all(
    Array.from({ length: clients }, async () => {
      const oks: boolean[] = [];
      for (let round = 0; round < rounds; round++) oks.push((await requestRemoval(server, image.jsonBody)).sample.ok);
      return oks;
    }),
  );
  clearInterval(sampler);
  const ok = answers.flat().filter(Boolean).length;
  console.log(`${clients} clients × ${rounds} × ${image.label} (${image.width}×${image.height}): ${ok} of ${clients * rounds} answered 200 in ${seconds()} s`);
  console.log(`peak RSS (VmHWM) ${(await mib('VmHWM')).toFixed(0)} MiB; RSS after ${(await mib('VmRSS')).toFixed(0)} MiB`);
  console.log(`RSS (MiB) every 0.5 s: ${series.join(', ')}`);
} finally {
  await server.stop();
  await rm(work, { recursive: true, force: true });
}
