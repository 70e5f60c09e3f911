/**
 * Calibrates `quality=auto`'s rule: which photos get the model's second look.
 *
 *   npx tsx scripts/calibrate-auto.ts [DIR …] [--photos DIR] [--precision int8|fp32] [--json FILE]
 *
 * For every labelled photo (DIR as in `npm run eval`; default every folder under
 * ../shared/fixtures/labelled) it runs the real pipeline, refined, with `fast` and with `best`
 * (the model runs once per view, scripts/eval/memo-segmenter.ts) and scores both, then measures
 * every candidate doubt signal on the first look's mask (scripts/eval/first-look-signals.ts,
 * and the rule's own, src/pipeline/second-look.ts). The unlabelled photos of --photos (default
 * ../shared/fixtures/photos, searched recursively) get the first look only: they count for the
 * model passes per photo, not for the scores.
 *
 * `auto`'s answer on a photo is `fast`'s when the rule says no second look and `best`'s when it
 * says yes, byte for byte (test/unit/auto-quality.test.ts), so its scores follow from the two.
 * For each signal and threshold it prints: the share of second looks among the labelled photos,
 * model passes per photo (m+m: the main GrabCut set and the mattes; lab: every labelled photo,
 * the ambiguous pairs too; all: with the unlabelled photos), the share of `best`'s gain captured on the main GrabCut set (mean IoU,
 * boundary F), the matting MAE against `best`'s, and the largest IoU loss against `best` on one
 * photo; then the oracle, which gives the second look to the photos that gain most.
 */
import { existsSync } from 'node:fs';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, extname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import sharp from 'sharp';
import { decodeForModel } from '../src/pipeline/decode.js';
import { FinishThread } from '../src/pipeline/finish-thread.js';
import { removeBackground } from '../src/pipeline/remove-background.js';
import { firstLookDoubt, readFirstLook, SECOND_LOOK_THRESHOLD } from '../src/pipeline/second-look.js';
import { mirrorImage } from '../src/pipeline/views.js';
import { decideKind, displayPath, findLabelledPairs, readGreyMask, resizeGreyMask } from './eval/dataset.js';
import { firstLookSignals, type FirstLookSignals } from './eval/first-look-signals.js';
import { loadEvalModel, type Precision } from './eval/load-model.js';
import { memoSegmenter } from './eval/memo-segmenter.js';
import { scoreBinary, scoreSoft } from './eval/metrics.js';
import { scriptArgs } from './lib/script-args.js';

const USAGE = `usage: npx tsx scripts/calibrate-auto.ts [DIR …] [--photos DIR] [--precision int8|fp32] [--json FILE]

  DIR            folder with images/ and masks/ (npm run eval's layout); default: every folder
                 under ../shared/fixtures/labelled
  --photos DIR   unlabelled photos, first look only, for the passes per photo (default
                 ../shared/fixtures/photos; 'none' to skip)
  --precision P  int8 (default, as the server runs on a CPU with VNNI) or fp32
  --json FILE    also write every photo's signals and scores`;

const FIXTURES = resolve(dirname(fileURLToPath(import.meta.url)), '../../shared/fixtures');
/** Shares of the labelled photos given a second look, for the thresholds of every signal. */
const SHARES = [0.1, 0.15, 0.2, 0.25, 0.3, 0.35];
/** Thresholds of the rule's own signal around the one in the code, to show how steep the choice is. */
const RULE_THRESHOLDS = [0.06, 0.07, 0.08, 0.09, 0.1, 0.11, 0.12];

interface Scores {
  iou?: number;
  boundaryF?: number;
  mae: number;
}

/** One photo: its candidate signals, and, when labelled, fast's and best's scores. */
interface PhotoRecord {
  name: string;
  set: 'main' | 'ambiguous' | 'matting' | 'unlabelled';
  signals: Signals;
  fast?: Scores;
  best?: Scores;
}

type Signals = FirstLookSignals & { rule: number };

/** A candidate: how doubtful a first look is, higher = more doubtful. */
interface Candidate {
  name: string;
  doubt: (s: Signals) => number;
}

const CANDIDATES: Candidate[] = [
  { name: 'the rule\'s (second-look.ts)', doubt: (s) => s.rule },
  { name: 'hesitation (fast X-Uncertainty)', doubt: (s) => s.hesitation },
  { name: 'unsure share', doubt: (s) => s.unsure },
  { name: 'extra parts', doubt: (s) => s.extraParts + s.hesitation / 10 },
  { name: 'frame cut', doubt: (s) => s.frameCut },
  { name: 'small mask', doubt: (s) => s.smallness },
  { name: 'hesitation × (1 + extra parts)', doubt: (s) => s.hesitation * (1 + s.extraParts) },
  { name: 'unsure × (1 + extra parts)', doubt: (s) => s.unsure * (1 + s.extraParts) },
  { name: 'hesitation + frame cut', doubt: (s) => s.hesitation + s.frameCut },
  { name: 'doubt over the picture', doubt: (s) => s.pictureDoubt },
  { name: 'faint share', doubt: (s) => s.faint },
  { name: 'doubt along the rim', doubt: (s) => s.rimDoubt },
  { name: 'hesitation + doubt along the rim', doubt: (s) => s.hesitation + s.rimDoubt },
];

async function main(argv: string[]): Promise<number> {
  const args = scriptArgs({ args: argv, allowPositionals: true, options: { photos: { type: 'string' }, precision: { type: 'string' }, json: { type: 'string' }, help: { type: 'boolean', short: 'h' } } }, USAGE);
  if (typeof args === 'number') return args;
  const precision = (args.values.precision ?? 'int8') as Precision;
  if (precision !== 'int8' && precision !== 'fp32') {
    console.error(`--precision takes int8 or fp32\n\n${USAGE}`);
    return 2;
  }
  const labelledRoot = join(FIXTURES, 'labelled');
  const dirs = args.positionals.length > 0 ? args.positionals.map((d) => resolve(d)) : existsSync(labelledRoot) ? (await readdir(labelledRoot)).sort().map((d) => join(labelledRoot, d)) : [];
  if (dirs.length === 0) {
    console.error(`No labelled folder: none given and ${displayPath(labelledRoot)} is missing.\n\n${USAGE}`);
    return 2;
  }
  const photosDir = args.values.photos ?? join(FIXTURES, 'photos');
  const photos = photosDir === 'none' || !existsSync(photosDir) ? [] : await listPhotos(photosDir);

  const { model, modelPath } = await loadEvalModel(precision);
  const segmenter = memoSegmenter(model);
  const finisher = new FinishThread();
  console.log(`model ${displayPath(modelPath)}; rule: src/pipeline/second-look.ts, threshold ${SECOND_LOOK_THRESHOLD}`);
  const records: PhotoRecord[] = [];
  try {
    for (const dir of dirs) {
      const folder = await findLabelledPairs(dir);
      const masks = await Promise.all(folder.pairs.map((pair) => readGreyMask(pair.maskPath)));
      const { kind } = decideKind(masks);
      for (const [index, pair] of folder.pairs.entries()) {
        progress(`${displayPath(dir)} ${index + 1}/${folder.pairs.length} ${pair.name}`);
        const bytes = await readFile(pair.imagePath);
        const signals = await firstLook(bytes, segmenter, true);
        const scores: Partial<Record<'fast' | 'best', Scores>> = {};
        for (const quality of ['fast', 'best'] as const) {
          const { bytes: png } = await removeBackground(bytes, { segmenter, finisher, maxPixels: 1e9, quality });
          const { data, info } = await sharp(png).ensureAlpha().extractChannel(3).raw().toBuffer({ resolveWithObject: true });
          let mask = masks[index];
          if (mask.width !== info.width || mask.height !== info.height) mask = await resizeGreyMask(mask, info.width, info.height, kind === 'binary');
          if (kind === 'binary') {
            const { iou, boundaryF, mae } = scoreBinary(data, mask.data, info.width, info.height);
            scores[quality] = { iou, boundaryF, mae };
          } else scores[quality] = { mae: scoreSoft(data, mask.data, info.width, info.height).mae };
        }
        const set = kind === 'soft' ? 'matting' : pair.ambiguous ? 'ambiguous' : 'main';
        records.push({ name: pair.name, set, signals, ...scores });
      }
    }
    for (const [index, path] of photos.entries()) {
      progress(`${displayPath(photosDir)} ${index + 1}/${photos.length}`);
      records.push({ name: displayPath(path), set: 'unlabelled', signals: await firstLook(await readFile(path), segmenter, false) });
    }
  } finally {
    progress('');
    await segmenter.close();
    await finisher.close();
  }
  report(records);
  if (args.values.json) await writeFile(args.values.json, `${JSON.stringify(records, null, 1)}\n`);
  return 0;
}

/**
 * The first look's signals; with `mirror`, the mirror view runs in the same call, so that the
 * memo holds both views when the pipeline then runs `fast` and `best`.
 */
async function firstLook(bytes: Uint8Array, segmenter: ReturnType<typeof memoSegmenter>, mirror: boolean): Promise<Signals> {
  const picture = await decodeForModel(bytes, { maxPixels: 1e9, size: segmenter.size });
  const pictures = mirror ? [{ ...picture, data: picture.data.slice() }, mirrorImage(picture)] : [picture];
  const [first] = await segmenter.segment(pictures);
  return { ...firstLookSignals(first.data, first.width), rule: firstLookDoubt(readFirstLook(first)) };
}

function report(records: PhotoRecord[]): void {
  const labelled = records.filter((r) => r.set !== 'unlabelled');
  const main = records.filter((r) => r.set === 'main');
  const matting = records.filter((r) => r.set === 'matting');
  const mean = (rows: PhotoRecord[], pick: (r: PhotoRecord) => number) => rows.reduce((sum, r) => sum + pick(r), 0) / rows.length;
  const fastIou = mean(main, (r) => r.fast!.iou!);
  const bestIou = mean(main, (r) => r.best!.iou!);
  const fastBf = mean(main, (r) => r.fast!.boundaryF!);
  const bestBf = mean(main, (r) => r.best!.boundaryF!);
  const fastMae = mean(matting, (r) => r.fast!.mae);
  const bestMae = mean(matting, (r) => r.best!.mae);
  console.log(`\n${main.length} main GrabCut photos, ${labelled.length - main.length - matting.length} ambiguous, ${matting.length} matting, ${records.length - labelled.length} unlabelled`);
  console.log(`main IoU fast ${fastIou.toFixed(4)} best ${bestIou.toFixed(4)}; boundary F fast ${fastBf.toFixed(4)} best ${bestBf.toFixed(4)}; matting MAE fast ${fastMae.toFixed(4)} best ${bestMae.toFixed(4)}`);
  console.log('targets: IoU and boundary F gain ≥ 85 %, matting MAE ≤ best + 0.002, passes per photo ≤ 1.35, no photo below best − 0.06 IoU\n');

  /** auto's figures when `second` says which photos get the second look. */
  const outcome = (second: (r: PhotoRecord) => boolean) => {
    const pick = (r: PhotoRecord) => (second(r) ? r.best! : r.fast!);
    const iou = mean(main, (r) => pick(r).iou!);
    const bf = mean(main, (r) => pick(r).boundaryF!);
    const mae = mean(matting, (r) => pick(r).mae);
    const worst = Math.min(...labelled.filter((r) => r.set !== 'matting').map((r) => pick(r).iou! - r.best!.iou!));
    return {
      looks: labelled.filter(second).length / labelled.length,
      passesLabelled: 1 + labelled.filter(second).length / labelled.length,
      passesScored: 1 + [...main, ...matting].filter(second).length / (main.length + matting.length),
      passesAll: 1 + records.filter(second).length / records.length,
      iouShare: (iou - fastIou) / (bestIou - fastIou),
      bfShare: (bf - fastBf) / (bestBf - fastBf),
      maeGap: mae - bestMae,
      worst,
    };
  };
  const header = `${'signal'.padEnd(34)} ${'threshold'.padStart(9)} ${'2nd'.padStart(5)} ${'pass/m+m'.padStart(8)} ${'pass/lab'.padStart(8)} ${'pass/all'.padStart(8)} ${'IoU gain'.padStart(8)} ${'BF gain'.padStart(8)} ${'MAE−best'.padStart(9)} ${'worst'.padStart(7)}`;
  const row = (name: string, threshold: string, o: ReturnType<typeof outcome>) =>
    console.log(
      `${name.padEnd(34)} ${threshold.padStart(9)} ${pct(o.looks)} ${o.passesScored.toFixed(3).padStart(8)} ${o.passesLabelled.toFixed(3).padStart(8)} ${o.passesAll.toFixed(3).padStart(8)} ${pct(o.iouShare).padStart(8)} ${pct(o.bfShare).padStart(8)} ${sign(o.maeGap).padStart(9)} ${sign(o.worst).padStart(7)}`,
    );
  console.log(header);
  for (const candidate of CANDIDATES) {
    const values = labelled.map((r) => candidate.doubt(r.signals)).sort((a, b) => b - a);
    for (const share of SHARES) {
      // The threshold that sends this share of the labelled photos to a second look.
      const threshold = values[Math.max(0, Math.round(share * values.length) - 1)];
      row(candidate.name, threshold.toFixed(4), outcome((r) => candidate.doubt(r.signals) >= threshold));
    }
    console.log('');
  }
  console.log('the rule\'s signal at fixed thresholds; the one in the code marked *');
  for (const threshold of RULE_THRESHOLDS) {
    const mark = threshold === SECOND_LOOK_THRESHOLD ? '*' : ' ';
    row(`the rule's${mark}`, `> ${threshold.toFixed(2)}`, outcome((r) => r.signals.rule > threshold));
  }
  console.log('');
  // The oracle knows each photo's gain: IoU on GrabCut, MAE on the mattes, the largest first.
  const gain = (r: PhotoRecord) => (r.set === 'matting' ? (r.fast!.mae - r.best!.mae) * 10 : r.best!.iou! - r.fast!.iou!);
  const byGain = [...labelled].sort((a, b) => gain(b) - gain(a));
  for (const share of SHARES) {
    const chosen = new Set(byGain.slice(0, Math.round(share * labelled.length)));
    row('oracle (best gain first)', '', outcome((r) => chosen.has(r)));
  }
  console.log('\nper photo (main and matting): gain of best, rule signal, second look?');
  for (const r of [...main, ...matting].sort((a, b) => gain(b) - gain(a))) {
    const g = r.set === 'matting' ? `MAE ${sign(r.best!.mae - r.fast!.mae)}` : `IoU ${sign(r.best!.iou! - r.fast!.iou!)} BF ${sign(r.best!.boundaryF! - r.fast!.boundaryF!)}`;
    const s = r.signals;
    console.log(`  ${r.name.padEnd(24)} ${g.padEnd(26)} rule ${s.rule.toFixed(3)} hes ${s.hesitation.toFixed(3)} unsure ${s.unsure.toFixed(3)} parts+${s.extraParts} frame ${s.frameCut.toFixed(3)} ${s.rule > SECOND_LOOK_THRESHOLD ? 'second look' : ''}`);
  }
}

async function listPhotos(dir: string): Promise<string[]> {
  const found: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) found.push(...(await listPhotos(path)));
    else if (['.jpg', '.jpeg', '.png', '.webp'].includes(extname(entry.name).toLowerCase())) found.push(path);
  }
  return found.sort();
}

function pct(share: number): string {
  return `${(100 * share).toFixed(0)} %`.padStart(5);
}

function sign(value: number): string {
  return `${value >= 0 ? '+' : '−'}${Math.abs(value).toFixed(4)}`;
}

function progress(text: string): void {
  if (process.stderr.isTTY) process.stderr.write(`\r\x1b[K${text}`);
}

process.exitCode = await main(process.argv.slice(2));
