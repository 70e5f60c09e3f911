/**
 * What refinement costs at a given size, from the pipeline's own stage timings (the ones the
 * Server-Timing header reports): each photo is scaled to N megapixels, then put through
 * removeBackground with refine: false and refine: true alternately, after one warm-up round.
 *
 *   npx tsx scripts/eval/refine-cost.ts [PHOTO …] [--megapixels 10] [--rounds 6]
 *
 * Default photos: two of ../shared/fixtures/photos (a portrait with loose hair, a bicycle's
 * wiry outline). Prints the median of each stage per mode, and the refine stage against the
 * model run: on its own, and net of the bilinear stretch (postprocess) it replaces. The part
 * of refinement that runs beside the model shows as a longer inference; the last line is the
 * whole difference, request against request (stages in sequence, decode hidden behind
 * inference as it is in the pipeline).
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { basename, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import sharp from 'sharp';
import { assembleModel } from '../../src/model/assemble-model.js';
import { loadSegmenter } from '../../src/model/onnx-segmenter.js';
import { FinishThread } from '../../src/pipeline/finish-thread.js';
import { removeBackground, type StageTimings } from '../../src/pipeline/remove-background.js';

const PHOTOS = resolve(dirname(fileURLToPath(import.meta.url)), '../../../shared/fixtures/photos');
const DEFAULT_PHOTOS = ['test_human_images/julia+trotti_17.jpg', 'test_images/bike.jpg'].map((p) => resolve(PHOTOS, p));
const STAGES = ['decode', 'inference', 'postprocess', 'refine', 'encode'] as const;

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { megapixels: { type: 'string', default: '10' }, rounds: { type: 'string', default: '6' } },
});
const megapixels = Number(values.megapixels);
const rounds = Number(values.rounds);
const photos = positionals.length > 0 ? positionals.map((p) => resolve(p)) : DEFAULT_PHOTOS.filter((p) => existsSync(p));
if (photos.length === 0 || !(megapixels > 0) || !(rounds > 0)) {
  console.error('usage: npx tsx scripts/eval/refine-cost.ts [PHOTO …] [--megapixels 10] [--rounds 6]');
  process.exit(2);
}

const modelPath = process.env.CUTOUT_MODEL_PATH ?? (await assembleModel(process.env.CUTOUT_DATA_DIR ?? './data'));
const segmenter = await loadSegmenter(modelPath, { threads: availableParallelism() });
await segmenter.runTensor(new Float32Array(3 * segmenter.size ** 2));
const finisher = new FinishThread();
const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1];

try {
  for (const path of photos) {
    const source = sharp(await readFile(path));
    const { width = 0, height = 0 } = await source.metadata();
    const scale = Math.sqrt((megapixels * 1e6) / (width * height));
    const [w, h] = [Math.round(width * scale), Math.round(height * scale)];
    const bytes = await source.resize(w, h).jpeg({ quality: 90 }).toBuffer();
    const timings: Record<'raw' | 'refined', StageTimings[]> = { raw: [], refined: [] };
    for (let round = 0; round <= rounds; round++) {
      for (const mode of ['raw', 'refined'] as const) {
        const { timings: t } = await removeBackground(bytes, { segmenter, finisher, maxPixels: 1e9, refine: mode === 'refined' });
        if (round > 0) timings[mode].push(t); // round 0 warms up both paths
      }
    }
    console.log(`\n${basename(path)} at ${w}×${h} (${((w * h) / 1e6).toFixed(1)} MP), median of ${rounds} rounds, ms`);
    console.log(`  ${'mode'.padEnd(8)}${STAGES.map((s) => s.padStart(12)).join('')}`);
    for (const mode of ['raw', 'refined'] as const) {
      console.log(`  ${mode.padEnd(8)}${STAGES.map((s) => median(timings[mode].map((t) => t[s])).toFixed(0).padStart(12)).join('')}`);
    }
    const inference = median(timings.raw.map((t) => t.inference));
    const refine = median(timings.refined.map((t) => t.refine ?? 0));
    const stretch = median(timings.raw.map((t) => t.postprocess));
    console.log(
      `  refine stage ${refine.toFixed(0)} ms = ${((100 * refine) / inference).toFixed(1)} % of the model run; ` +
        `net of the ${stretch.toFixed(0)} ms stretch it replaces: ${(refine - stretch).toFixed(0)} ms = ${((100 * (refine - stretch)) / inference).toFixed(1)} %`,
    );
    const total = (t: StageTimings) => t.preprocess + t.queue + Math.max(t.inference, t.decode) + t.postprocess + (t.refine ?? 0) + t.encode;
    const added = median(timings.refined.map(total)) - median(timings.raw.map(total));
    console.log(`  whole request, refined − raw: ${added.toFixed(0)} ms = ${((100 * added) / inference).toFixed(1)} % of the model run`);
  }
} finally {
  await segmenter.close();
  await finisher.close();
}
