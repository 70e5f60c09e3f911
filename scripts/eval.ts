/**
 * Quality evaluation: runs Cutout's real pipeline on labelled photos and scores the alpha
 * channel it returns against the ground truth, raw (`refine: false`) and refined.
 *
 *   npm run eval -- [DIR …] [--refine on|off|compare] [--no-fringe] [--json FILE] [--all]
 *
 * DIR holds images/ and masks/ paired by base name (../shared/fixtures/labelled/* layout);
 * with none, every folder under ../shared/fixtures/labelled. A folder whose masks hold only
 * 0/128/255 is scored as binary (IoU, F-measure, boundary F, MAE), any other as soft mattes
 * (MAE, MSE, SAD, gradient error, and the green-screen colour test of scripts/eval/fringe.ts);
 * see scripts/eval/metrics.ts for the definitions. The model runs once per image whatever
 * the number of modes (scripts/eval/memo-segmenter.ts).
 * Model: CUTOUT_MODEL_PATH, or the bundled one assembled into CUTOUT_DATA_DIR (./data).
 */
import { existsSync } from 'node:fs';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import sharp from 'sharp';
import type { Segmenter } from '../src/model/segmenter.js';
import type { Length, RegionOfInterest } from '../src/pipeline/answer-spec.js';
import { FinishThread } from '../src/pipeline/finish-thread.js';
import type { RefineSettings } from '../src/pipeline/refine/refine-cutout.js';
import { removeBackground } from '../src/pipeline/remove-background.js';
import type { Quality } from '../src/pipeline/views.js';
import { decideKind, displayPath, findLabelledPairs, readGreyMask, resizeGreyMask, type GreyImage, type LabelledFolder, type LabelledPair } from './eval/dataset.js';
import { composeOver, fringeScores, SCREEN_GREEN } from './eval/fringe.js';
import { comparePrecision } from './eval/compare-precision.js';
import { loadEvalModel } from './eval/load-model.js';
import { memoSegmenter } from './eval/memo-segmenter.js';
import { meanOf, scoreBinary, scoreSoft, semiTransparentShare } from './eval/metrics.js';
import { modesFor, parseRefineSettings, qualityOf, refineOption, type FringeModeName, type ModeName } from './eval/modes.js';
import { DEFINITIONS, printFolder, type FolderResult, type ImageResult } from './eval/report.js';
import { groundTruthRoi } from './eval/roi.js';
import { scriptArgs } from './lib/script-args.js';

const USAGE = `usage: npm run eval -- [DIR …] [--refine on|off|compare] [--quality fast|best|auto|compare] [--refine-settings JSON] [--no-fringe] [--json FILE] [--all] [--precision fp32|int8]
       npm run eval -- --compare FP32.json INT8.json

  DIR             folder with images/ and masks/ (same base names); default: every folder
                  under ../shared/fixtures/labelled
  --refine MODE   compare (default): the raw pipeline (refine: false) and the refined one,
                  side by side, from one model run per image; on or off: only that one
  --quality Q     fast (default): one view of each photo; best: the photo and its mirror,
                  fused (src/pipeline/views.ts); auto: the mirror too only where the first
                  look is doubtful (src/pipeline/second-look.ts); compare: all three, side by
                  side (each view runs once for all)
  --refine-settings JSON
                  the refined mode with some settings changed, e.g. '{"gridSide":256}'
                  (src/pipeline/refine/refine-cutout.ts lists them)
  --roi MARGIN    also the refined pipeline with a roi around the true subject (binary
                  masks): its box grown by MARGIN (10%, 20px), as a client who knows where
                  the subject is would send it; reported beside the whole-photo modes
  --no-fringe     skip the green-screen colour test of soft-matte folders
  --json FILE     also write every image's figures to FILE
  --all           print every image, not only the worst five per folder
  --precision P   fp32 (default) or int8: the model's float32 form, or the int8 one built from
                  it with its calibration file (src/model/int8-model.ts)
  --compare A B   the int8 model's quality targets, int8 (B) against float32 (A), from two --json reports

  Model: CUTOUT_MODEL_PATH, or the bundled model assembled into CUTOUT_DATA_DIR (default ./data).`;

const DEFAULT_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../shared/fixtures/labelled');

async function main(argv: string[]): Promise<number> {
  const args = scriptArgs(
    {
      args: argv,
      allowPositionals: true,
      options: {
        refine: { type: 'string' },
        quality: { type: 'string' },
        'refine-settings': { type: 'string' },
        'no-fringe': { type: 'boolean' },
        roi: { type: 'string' },
        json: { type: 'string' },
        all: { type: 'boolean' },
        precision: { type: 'string' },
        compare: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    },
    USAGE,
  );
  if (typeof args === 'number') return args;
  if (args.values.compare) {
    if (args.positionals.length !== 2) {
      console.error(`--compare takes two reports\n\n${USAGE}`);
      return 2;
    }
    return comparePrecision(args.positionals[0], args.positionals[1]);
  }
  const precision = args.values.precision ?? 'fp32';
  if (precision !== 'fp32' && precision !== 'int8') {
    console.error(`--precision takes fp32 or int8, not ${precision}\n\n${USAGE}`);
    return 2;
  }
  const modes = modesFor(args.values.refine, args.values.quality);
  if (!modes) {
    console.error(`--refine takes on, off or compare, and --quality fast, best, auto or compare, not ${args.values.refine} / ${args.values.quality}\n\n${USAGE}`);
    return 2;
  }
  const roiMargin = args.values.roi === undefined ? undefined : parseMargin(args.values.roi);
  if (args.values.roi !== undefined && !roiMargin) {
    console.error(`--roi takes a margin in percent of the box or pixels (10%, 20px), not ${args.values.roi}\n\n${USAGE}`);
    return 2;
  }
  let settings: RefineSettings;
  try {
    settings = parseRefineSettings(args.values['refine-settings']);
  } catch (error) {
    console.error(`${(error as Error).message}\n\n${USAGE}`);
    return 2;
  }
  const dirs = args.positionals.length > 0 ? args.positionals.map((d) => resolve(d)) : await defaultDirs();
  if (dirs.length === 0) {
    console.error(`No folder to evaluate: none given and ${displayPath(DEFAULT_ROOT)} has no subfolders.\n\n${USAGE}`);
    return 2;
  }
  const folders: LabelledFolder[] = [];
  for (const dir of dirs) {
    try {
      folders.push(await findLabelledPairs(dir));
    } catch (error) {
      console.error((error as Error).message);
      return 2;
    }
  }

  const started = performance.now();
  let loaded;
  try {
    loaded = await loadEvalModel(precision);
  } catch (error) {
    console.error((error as Error).message);
    return 2;
  }
  const { model, modelPath, threads } = loaded;
  const segmenter = memoSegmenter(model);
  const pipeline: Pipeline = { segmenter, finisher: new FinishThread() };
  console.log(`model  ${displayPath(modelPath)} (${model.size}×${model.size} input, ${threads} threads); modes: ${modes.join(', ')}`);
  if (args.values['refine-settings'] !== undefined) console.log(`refine settings: ${JSON.stringify(settings)}`);

  const results: FolderResult[] = [];
  try {
    for (const folder of folders) {
      const result = await evaluateFolder(folder, pipeline, roiMargin ? [...modes, 'roi'] : modes, settings, !args.values['no-fringe'], roiMargin);
      printFolder(result, args.values.all ?? false);
      results.push(result);
    }
  } finally {
    await segmenter.close();
    await pipeline.finisher.close();
  }

  const all = results.flatMap((f) => f.images);
  const scored = all.filter((r) => !r.error);
  const seconds = (performance.now() - started) / 1000;
  console.log(`\ntotal ${seconds.toFixed(1)} s for ${all.length} images, ${segmenter.runs} model runs (model load included); per image:`);
  for (const [index, mode] of modes.entries()) {
    const rows = scored.map((r) => r.modes[mode]!);
    const model = index === 0 ? `of which model run ${fmt(meanOf(rows, (r) => r.modelMs), 0)} ms` : "the model's output reused";
    console.log(`  ${mode.padEnd(8)} pipeline ${fmt(meanOf(rows, (r) => r.pipelineMs), 0)} ms, ${model}, refine ${fmt(meanOf(rows, (r) => r.refineMs), 0)} ms`);
  }
  if (args.values.json) {
    const report = { model: modelPath, threads, modes, totalSeconds: seconds, definitions: DEFINITIONS, folders: results };
    await writeFile(args.values.json, `${JSON.stringify(report, null, 2)}\n`);
    console.log(`per-image figures written to ${args.values.json}`);
  }
  const failed = all.length - scored.length;
  if (failed > 0) console.log(`${failed} image(s) failed; see above`);
  return failed > 0 ? 1 : 0;
}

/** `--roi 10%` or `--roi 20px` (a bare number is pixels). */
function parseMargin(text: string): Length | undefined {
  const match = /^(\d+(?:\.\d+)?)(px|%)?$/.exec(text.trim());
  return match ? { value: Number(match[1]), unit: match[2] === '%' ? '%' : 'px' } : undefined;
}

async function defaultDirs(): Promise<string[]> {
  if (!existsSync(DEFAULT_ROOT)) return [];
  const entries = await readdir(DEFAULT_ROOT, { withFileTypes: true });
  return entries.filter((e) => e.isDirectory()).map((e) => join(DEFAULT_ROOT, e.name)).sort();
}

async function evaluateFolder(folder: LabelledFolder, pipeline: Pipeline, allModes: ModeName[], settings: RefineSettings, fringe: boolean, roiMargin?: Length): Promise<FolderResult> {
  // Masks first: they are small, and their values decide how the folder is scored.
  const masks = new Map<LabelledPair, GreyImage>();
  for (const pair of folder.pairs) masks.set(pair, await readGreyMask(pair.maskPath));
  const { kind, reason } = decideKind([...masks.values()]);
  // A roi from the truth needs a subject's box: binary masks only (soft mattes are edge crops).
  const modes = kind === 'binary' ? allModes : allModes.filter((mode) => mode !== 'roi');

  const images: ImageResult[] = [];
  for (const [index, pair] of folder.pairs.entries()) {
    if (process.stderr.isTTY) process.stderr.write(`\r\x1b[K${displayPath(folder.dir)} ${index + 1}/${folder.pairs.length} ${pair.name}`);
    const result: ImageResult = {
      name: pair.name,
      image: pair.imagePath,
      mask: pair.maskPath,
      width: 0,
      height: 0,
      ambiguous: pair.ambiguous,
      synthetic: pair.synthetic,
      note: pair.note,
      modes: {},
    };
    try {
      const bytes = await readFile(pair.imagePath);
      let mask = masks.get(pair)!;
      for (const mode of modes) {
        const t0 = performance.now();
        const roi = mode === 'roi' && roiMargin ? groundTruthRoi(masks.get(pair)!, roiMargin) : undefined;
        const { cutout, modelMs, refineMs, uncertainty, looks } = await runPipeline(bytes, pipeline, refineOption(mode, settings), qualityOf(mode), roi);
        const pipelineMs = performance.now() - t0;
        const alpha = alphaOf(cutout);
        result.width = alpha.width;
        result.height = alpha.height;
        if (mask.width !== alpha.width || mask.height !== alpha.height) {
          result.maskResizedFrom = `${mask.width}×${mask.height}`;
          mask = await resizeGreyMask(mask, alpha.width, alpha.height, kind === 'binary');
        }
        const scores = kind === 'binary' ? { binary: scoreBinary(alpha.data, mask.data, alpha.width, alpha.height) } : { soft: scoreSoft(alpha.data, mask.data, alpha.width, alpha.height) };
        result.modes[mode] = { pipelineMs, modelMs, refineMs, uncertainty, looks, semiTransparent: semiTransparentShare(alpha.data), ...scores };
      }
      if (kind === 'soft' && fringe) result.fringe = await greenScreenTest(bytes, mask, pipeline, modes, settings);
    } catch (error) {
      result.error = error instanceof Error ? `${error.message}${error.cause instanceof Error ? ` (${error.cause.message})` : ''}` : String(error);
    }
    images.push(result);
  }
  if (process.stderr.isTTY) process.stderr.write('\r\x1b[K');
  return { dir: folder.dir, kind, kindReason: reason, manifest: folder.manifestPath, unpaired: folder.unpaired, modes, images };
}

interface RgbaImage {
  data: Uint8Array;
  width: number;
  height: number;
}

/** What the API would return, decoded: the image through removeBackground and the PNG read back as RGBA. */
/** The model (remembering its last answer) and the finish thread, shared by every image. */
interface Pipeline {
  segmenter: Segmenter;
  finisher: FinishThread;
}

async function runPipeline(
  bytes: Uint8Array,
  { segmenter, finisher }: Pipeline,
  refine: boolean | RefineSettings,
  quality: Quality,
  roi?: RegionOfInterest,
): Promise<{ cutout: RgbaImage; modelMs: number; refineMs: number; uncertainty: number; looks: number }> {
  const { bytes: png, timings, uncertainty, looks } = await removeBackground(bytes, { segmenter, finisher, maxPixels: 1e9, refine, quality, roi });
  const { data, info } = await sharp(png).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
  return { cutout: { data, width: info.width, height: info.height }, modelMs: timings.inference, refineMs: timings.refine, uncertainty, looks };
}

function alphaOf(cutout: RgbaImage): GreyImage {
  const data = new Uint8Array(cutout.width * cutout.height);
  for (let i = 0; i < data.length; i++) data[i] = cutout.data[4 * i + 3];
  return { data, width: cutout.width, height: cutout.height };
}

/**
 * The image laid over green with its true matte (already at the image's size), cut out in
 * every mode plus "refined alpha, raw colours", each cut-out scored on white and black.
 */
async function greenScreenTest(bytes: Uint8Array, matte: GreyImage, pipeline: Pipeline, modes: ModeName[], settings: RefineSettings): Promise<ImageResult['fringe']> {
  const { data: foreground, info } = await sharp(bytes).autoOrient().removeAlpha().toColourspace('srgb').raw().toBuffer({ resolveWithObject: true });
  if (info.width !== matte.width || info.height !== matte.height) throw new Error(`green-screen test: image ${info.width}×${info.height}, matte ${matte.width}×${matte.height}`);
  const composite = await sharp(composeOver(foreground, matte.data, SCREEN_GREEN), { raw: { width: info.width, height: info.height, channels: 3 } }).png().toBuffer();
  const wholePhoto = modes.filter((mode): mode is 'raw' | 'refined' => mode === 'raw' || mode === 'refined');
  const fringeModes: FringeModeName[] = wholePhoto.length > 1 ? ['raw', 'alphaOnly', 'refined'] : wholePhoto;
  const scores: ImageResult['fringe'] = {};
  for (const mode of fringeModes) {
    const { cutout } = await runPipeline(composite, pipeline, refineOption(mode, settings), 'fast');
    scores[mode] = fringeScores(cutout.data, foreground, matte.data);
  }
  return scores;
}

function fmt(value: number, digits: number): string {
  return Number.isFinite(value) ? value.toFixed(digits) : '–';
}

process.exitCode = await main(process.argv.slice(2));
