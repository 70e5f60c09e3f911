/**
 * Calibration for the int8 model: runs the float32 model over photos, measures the range of
 * every activation the int8 rewrite quantizes (src/model/quantize/qdq-plan.ts) and writes
 * them to a calibration file, from which Cutout builds the int8 model at start.
 *
 *   npm run quantize -- [--model NAME|FILE.onnx] [--photos DIR] [--count N] [--out FILE.json] [--float-convs a,b]
 *
 * The rule (docs/internals/performance.md for what else was tried): a tensor's range runs
 * from the lowest of its per-photo 0.01th percentiles to the mean of its per-photo 99.99th
 * percentiles; the logits (the convolution's output that reaches the Sigmoid) are then clipped
 * to ±LOGIT_CLIP. Plain min/max breaks the model: a few activations have outliers fifty times
 * their 99.99th percentile, and a range stretched to them leaves the ordinary values a handful
 * of levels.
 *
 * With no --model, the bundled model's float32 rewrite (assembled into ./data) is measured
 * and the file written to src/model/isnet-int8-ranges.json; with --model, the file goes
 * beside that model as `<name>.int8-ranges.json`, where the server looks for it. --model
 * takes a model installed with `cutout models add` by its name (in CUTOUT_DATA_DIR, fed
 * with its own processing), or an ONNX file of the IS-Net family.
 */
import { existsSync } from 'node:fs';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import * as ort from 'onnxruntime-node';
import { assembleModel } from '../src/model/assemble-model.js';
import { rangesPathFor } from '../src/model/int8-model.js';
import { foldConvChains } from '../src/model/quantize/fold-convs.js';
import type { Int8Ranges } from '../src/model/quantize/int8-ranges.js';
import { openModel } from '../src/model/quantize/onnx-graph.js';
import { planQuantization } from '../src/model/quantize/qdq-plan.js';
import { decodeForModel } from '../src/pipeline/decode.js';
import { resolveModel } from '../src/model/installed-models.js';
import { ISNET_PROCESSING } from '../src/model/model-processing.js';
import { channelTables, toModelTensor } from '../src/model/model-tensor.js';
import { withExtraOutputs } from './bench/onnx-protobuf.js';
import { tensorStats, type TensorStats } from './quantize/tensor-percentiles.js';
import { disableOnnxRuntimeTelemetry } from '../src/model/onnx-runtime-telemetry.js';

disableOnnxRuntimeTelemetry();

const LOW = 0.0001;
const HIGH = 0.9999;
const LOGIT_CLIP = 16;
/** Tensors fetched per pass: the largest are 64 MB, and each batch is held for one photo. */
const BATCH = 20;
const RULE = `per tensor: from the lowest per-photo ${LOW * 100}th percentile to the mean of the per-photo ${HIGH * 100}th percentiles; logits (a Conv output that reaches the Sigmoid) clipped to ±${LOGIT_CLIP}`;
const BUNDLED_RANGES_PATH = resolve(dirname(fileURLToPath(import.meta.url)), '../src/model/isnet-int8-ranges.json');
const PHOTOS = resolve(dirname(fileURLToPath(import.meta.url)), '../../shared/fixtures/photos');

/** `count` photos spread evenly over the folder's sorted images (its top level only). */
async function pickPhotos(dir: string, count: number): Promise<string[]> {
  const all = (await readdir(dir)).filter((name) => /\.(jpe?g|png|webp)$/i.test(name)).sort();
  if (all.length === 0) throw new Error(`no photos in ${dir}`);
  const step = all.length / Math.min(count, all.length);
  return Array.from({ length: Math.min(count, all.length) }, (_, i) => join(dir, all[Math.floor(i * step)]));
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { model: { type: 'string' }, photos: { type: 'string' }, count: { type: 'string', default: '8' }, out: { type: 'string' }, 'float-convs': { type: 'string' } },
  });
  const dataDir = process.env.CUTOUT_DATA_DIR ?? './data';
  const installed = values.model && !values.model.endsWith('.onnx') ? await resolveModel(dataDir, values.model) : undefined;
  const modelPath = installed?.path ?? (values.model ? resolve(values.model) : await assembleModel(dataDir));
  const processing = installed?.processing ?? ISNET_PROCESSING;
  const size = processing.inputSize;
  const out = values.out ?? (values.model ? rangesPathFor(modelPath) : BUNDLED_RANGES_PATH);
  const photosDir = values.photos ?? PHOTOS;
  if (!existsSync(photosDir)) throw new Error(`no photo folder ${photosDir}: pass --photos DIR`);
  // The float convolutions: as given, else those of the file being replaced (a choice made by measurement, docs/internals/performance.md).
  const previous = existsSync(out) ? (JSON.parse(await readFile(out, 'utf8')) as Int8Ranges) : undefined;
  const floatConvs = values['float-convs'] !== undefined ? values['float-convs'].split(',').filter(Boolean) : (previous?.floatConvs ?? []);

  const bytes = await readFile(modelPath);
  const model = openModel(bytes);
  // Plan on the graph the rewrite quantizes; the folded convolution keeps its reader's output,
  // which the float32 model run below computes too (the same but at the edge).
  foldConvChains(model, new Set(floatConvs));
  const { measured } = planQuantization(model, new Set(floatConvs));
  const producers = new Map(model.nodes.flatMap((node) => node.outputs.map((name) => [name, node] as const)));
  const readers = (name: string) => model.nodes.filter((node) => node.inputs.includes(name));
  // Logits: a convolution's output that reaches a Sigmoid, directly or through Resizes.
  const reachesSigmoid = (name: string): boolean => readers(name).some((node) => node.opType === 'Sigmoid' || (node.opType === 'Resize' && reachesSigmoid(node.outputs[0])));
  const isLogit = (name: string) => producers.get(name)?.opType === 'Conv' && reachesSigmoid(name);

  const photos = await pickPhotos(photosDir, Number(values.count));
  const tensors = await Promise.all(
    photos.map(async (path) => toModelTensor(await decodeForModel(await readFile(path), { maxPixels: 1e9, size }), channelTables(processing))),
  );
  console.error(`${basename(modelPath)}: ${measured.length} tensors on ${photos.length} photos (${photos.map((p) => basename(p)).join(', ')})`);

  const stats = new Map<string, TensorStats[]>();
  const started = performance.now();
  for (let from = 0; from < measured.length; from += BATCH) {
    const names = measured.slice(from, from + BATCH);
    const outputs = names.filter((name) => !model.inputs.includes(name));
    const session = await ort.InferenceSession.create(withExtraOutputs(bytes, outputs), { intraOpNumThreads: availableParallelism(), graphOptimizationLevel: 'all' });
    for (const tensor of tensors) {
      const input = new ort.Tensor('float32', tensor, [1, 3, size, size]);
      const results = outputs.length > 0 ? await session.run({ [model.inputs[0]]: input }, outputs) : {};
      for (const name of names) {
        const data = name === model.inputs[0] ? tensor : results[name]?.data;
        if (!(data instanceof Float32Array)) throw new Error(`${name} came back as ${typeof data}`);
        stats.set(name, [...(stats.get(name) ?? []), tensorStats(data, [LOW, HIGH])]);
      }
    }
    await session.release();
    console.error(`  ${Math.min(from + BATCH, measured.length)}/${measured.length} tensors, ${((performance.now() - started) / 1000).toFixed(0)} s`);
  }

  const ranges: Record<string, [number, number]> = {};
  for (const [name, perPhoto] of stats) {
    let low = Math.min(...perPhoto.map((s) => s.percentiles[0]));
    let high = perPhoto.reduce((sum, s) => sum + s.percentiles[1], 0) / perPhoto.length;
    if (isLogit(name)) [low, high] = [Math.max(low, -LOGIT_CLIP), Math.min(high, LOGIT_CLIP)];
    const worst = Math.max(...perPhoto.map((s) => s.max));
    if (worst > 4 * high && high > 0) console.error(`  ${name}: max ${worst.toPrecision(4)}, range kept to ${high.toPrecision(4)}`);
    ranges[name] = [Number(low.toPrecision(6)), Number(high.toPrecision(6))];
  }
  const file: Int8Ranges = { model: basename(modelPath), rule: RULE, photos: photos.length, floatConvs, ranges };
  await writeFile(out, `${JSON.stringify(file, null, 1)}\n`);
  console.log(`wrote ${out}: ${Object.keys(ranges).length} ranges, ${floatConvs.length} float convolutions`);
}

await main();
