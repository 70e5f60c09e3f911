/**
 * How `npm run eval` prints a folder: per-mode means (split into real photos and synthetic
 * images when the manifest says which is which, ambiguous pairs apart), the worst five images
 * with every mode's figures, and for soft mattes the green-screen colour test.
 */
import { displayPath } from './dataset.js';
import type { FringeScores } from './fringe.js';
import { ALPHA_THRESHOLD, BOUNDARY_TOLERANCE_PX, F_BETA_SQUARED, GRADIENT_SIGMA, meanOf, UNLABELLED, type BinaryScores, type SoftScores } from './metrics.js';
import { MODE_LABEL, type FringeModeName, type ModeName } from './modes.js';

export type Kind = 'binary' | 'soft';

/** One image in one mode. */
export interface ModeResult {
  pipelineMs: number;
  modelMs: number;
  refineMs: number;
  /** The removal's `X-Uncertainty`. */
  uncertainty: number;
  /** The model's looks at the photo (`RemovedBackground.looks`); absent in reports made before it. */
  looks?: number;
  /** metrics.ts, semiTransparentShare. */
  semiTransparent: number;
  binary?: BinaryScores;
  soft?: SoftScores;
}

export interface ImageResult {
  name: string;
  image: string;
  mask: string;
  width: number;
  height: number;
  ambiguous: boolean;
  synthetic: boolean;
  note: string;
  /** `W×H` of the mask when it had to be resized to the prediction's size. */
  maskResizedFrom?: string;
  modes: Partial<Record<ModeName, ModeResult>>;
  /** Green-screen test, soft mattes only. */
  fringe?: Partial<Record<FringeModeName, FringeScores>>;
  error?: string;
}

export interface FolderResult {
  dir: string;
  kind: Kind;
  kindReason: string;
  manifest: string | undefined;
  unpaired: string[];
  modes: ModeName[];
  images: ImageResult[];
}

interface Column {
  label: string;
  pick: (r: ModeResult) => number;
  digits: number;
}

const BINARY_COLUMNS: Column[] = [
  { label: 'IoU', pick: (r) => r.binary!.iou, digits: 4 },
  { label: 'Fβ', pick: (r) => r.binary!.fBeta, digits: 4 },
  { label: 'P', pick: (r) => r.binary!.precision, digits: 4 },
  { label: 'R', pick: (r) => r.binary!.recall, digits: 4 },
  { label: `BF${BOUNDARY_TOLERANCE_PX}px`, pick: (r) => r.binary!.boundaryF, digits: 4 },
  { label: 'MAE', pick: (r) => r.binary!.mae, digits: 4 },
  { label: 'semi', pick: (r) => r.semiTransparent, digits: 4 },
  { label: 'unc', pick: (r) => r.uncertainty, digits: 4 },
];
const SOFT_COLUMNS: Column[] = [
  { label: 'MAE', pick: (r) => r.soft!.mae, digits: 4 },
  { label: 'MSE', pick: (r) => r.soft!.mse, digits: 4 },
  { label: 'SAD', pick: (r) => r.soft!.sad, digits: 2 },
  { label: 'Grad', pick: (r) => r.soft!.grad, digits: 2 },
  { label: 'semi', pick: (r) => r.semiTransparent, digits: 4 },
  { label: 'unc', pick: (r) => r.uncertainty, digits: 4 },
];

export const DEFINITIONS: Record<Kind | 'fringe' | 'views', string[]> = {
  binary: [
    `IoU, Fβ (β²=${F_BETA_SQUARED}), precision P, recall R: alpha ≥ ${ALPHA_THRESHOLD} against mask 255`,
    `BF${BOUNDARY_TOLERANCE_PX}px: boundary F1, boundary pixels matched within ${BOUNDARY_TOLERANCE_PX} px (the ${UNLABELLED} band counts as the true boundary)`,
    `MAE: mean |alpha − mask| / 255; all over labelled pixels (mask ≠ ${UNLABELLED}); means are per-image means`,
  ],
  soft: [
    'over every pixel, alpha and matte as 0..1: MAE, MSE; SAD = Σ|Δ| / 1000',
    `Grad = Σ(|∇alpha| − |∇matte|)² / 1000, Gaussian-derivative σ=${GRADIENT_SIGMA} (Deep Image Matting; whole image, no trimap)`,
    'means are per-image means',
  ],
  views: [
    'semi: semi-transparent area (10 % < alpha < 90 %) / subject area (alpha ≥ 128); unc: the answer\'s X-Uncertainty',
    'ranking: of the 10 worst images (IoU, or MAE for soft sets), how many are among the 10 most uncertain',
  ],
  fringe: [
    'green-screen test: each image laid over green (0,177,64) with its true matte, cut out again by the pipeline,',
    'then put on white and on black; mean |cut-out − truth| (0..255) over the pixels where the true matte is partial',
  ],
};

const LABEL_WIDTH = 30;
const cell = (value: number, digits: number) => (Number.isFinite(value) ? value.toFixed(digits) : '–').padStart(9);

/** Rows of means: each group (all / real / synthetic, main / ambiguous) that has images. */
function groupsOf(folder: FolderResult, ok: ImageResult[]): [string, ImageResult[]][] {
  const groups: [string, ImageResult[]][] = [];
  const main = ok.filter((r) => !r.ambiguous);
  const ambiguous = ok.filter((r) => r.ambiguous);
  groups.push([ambiguous.length > 0 ? 'main (not ambiguous)' : 'all', main]);
  const real = main.filter((r) => !r.synthetic);
  const synthetic = main.filter((r) => r.synthetic);
  if (real.length > 0 && synthetic.length > 0) groups.push(['  real photos', real], ['  synthetic', synthetic]);
  if (ambiguous.length > 0) groups.push(['ambiguous', ambiguous]);
  return groups;
}

/** Prints one folder's tables; `all` lists every image instead of the worst five. */
export function printFolder(folder: FolderResult, all: boolean): void {
  const columns = folder.kind === 'binary' ? BINARY_COLUMNS : SOFT_COLUMNS;
  const ok = folder.images.filter((r) => !r.error);
  const ambiguousCount = ok.filter((r) => r.ambiguous).length;
  const syntheticCount = ok.filter((r) => r.synthetic).length;
  console.log(`\n${displayPath(folder.dir)}: ${folder.images.length} pairs, ${folder.kind} (${folder.kindReason})`);
  for (const line of DEFINITIONS[folder.kind]) console.log(`  ${line}`);
  if (!folder.manifest) console.log('  no manifest.csv found beside or above the folder: every pair counts in the main mean');
  else {
    const parts = [
      ambiguousCount > 0 ? `${ambiguousCount} marked ambiguous_for_bg_removal=yes, reported apart and left out of the main mean` : 'no pair marked ambiguous_for_bg_removal=yes',
      syntheticCount > 0 ? `${syntheticCount} marked synthetic=yes, also shown apart from the real photos` : 'no pair marked synthetic=yes',
    ];
    console.log(`  manifest ${displayPath(folder.manifest)}: ${parts.join('; ')}`);
  }
  for (const line of folder.unpaired) console.log(`  unpaired: ${line}`);
  for (const r of folder.images.filter((r) => r.maskResizedFrom)) {
    const swapped = r.maskResizedFrom === `${r.height}×${r.width}` ? ' (width and height swapped: EXIF orientation?)' : '';
    console.log(`  mask resized: ${r.name} mask ${r.maskResizedFrom} → ${r.width}×${r.height}${swapped}`);
  }
  for (const r of folder.images.filter((r) => r.error)) console.log(`  FAILED ${r.name}: ${r.error}`);

  console.log(`  ${'mode'.padEnd(9)}${''.padEnd(LABEL_WIDTH)}${'n'.padStart(4)}${columns.map((c) => c.label.padStart(9)).join('')}`);
  const groups = groupsOf(folder, ok);
  for (const mode of folder.modes) {
    for (const [index, [label, rows]] of groups.entries()) {
      const scored = rows.map((r) => r.modes[mode]!);
      console.log(`  ${(index === 0 ? mode : '').padEnd(9)}${label.padEnd(LABEL_WIDTH)}${String(rows.length).padStart(4)}${columns.map((c) => cell(meanOf(scored, c.pick), c.digits)).join('')}`);
    }
  }

  printViewFigures(folder, groups[0][1].length > 0 ? groups[0][1] : ok, columns[0]);

  const rankMode = folder.modes[folder.modes.length - 1];
  const rank = columns[0];
  const pool = groups[0][1].length > 0 ? groups[0][1] : ok;
  // Worst first: lowest IoU for binary sets, highest MAE for soft ones.
  const order = (a: ImageResult, b: ImageResult) => {
    const d = rank.pick(a.modes[rankMode]!) - rank.pick(b.modes[rankMode]!);
    return folder.kind === 'binary' ? d : -d;
  };
  const shown = all ? [...ok].sort((a, b) => a.name.localeCompare(b.name, 'en', { numeric: true })) : [...pool].sort(order).slice(0, 5);
  console.log(all ? '  every image (* = ambiguous, s = synthetic):' : `  worst ${shown.length} by ${rank.label} (${rankMode}${ambiguousCount > 0 ? ', main' : ''}; s = synthetic):`);
  for (const r of shown) {
    for (const [index, mode] of folder.modes.entries()) {
      const label = index === 0 ? `${r.name}${r.ambiguous ? ' *' : ''}${r.synthetic ? ' s' : ''}` : '';
      const size = index === 0 ? `  ${r.width}×${r.height}` : '';
      console.log(`  ${label.padEnd(LABEL_WIDTH)}${mode.padEnd(9)}${''.padStart(4)}${columns.map((c) => cell(c.pick(r.modes[mode]!), c.digits)).join('')}${size}`);
    }
  }
  if (ok.some((r) => r.fringe)) printFringe(groups);
}

/**
 * For each mode: the semi-transparent area against the first mode's (the one-view answer),
 * the images where it grew by more than half, and how well the uncertainty finds the worst.
 */
function printViewFigures(folder: FolderResult, rows: ImageResult[], rank: Column): void {
  if (rows.length === 0) return;
  for (const line of DEFINITIONS.views) console.log(`  ${line}`);
  const base = folder.modes[0];
  const worstFirst = (mode: ModeName) => (a: ImageResult, b: ImageResult) => (folder.kind === 'binary' ? 1 : -1) * (rank.pick(a.modes[mode]!) - rank.pick(b.modes[mode]!));
  const top = Math.min(10, rows.length);
  for (const mode of folder.modes) {
    const semi = meanOf(rows, (r) => r.modes[mode]!.semiTransparent);
    const baseSemi = meanOf(rows, (r) => r.modes[base]!.semiTransparent);
    const grown = rows.filter((r) => r.modes[mode]!.semiTransparent > 1.5 * r.modes[base]!.semiTransparent + 0.001).map((r) => r.name);
    const worst = new Set([...rows].sort(worstFirst(mode)).slice(0, top).map((r) => r.name));
    const doubtful = [...rows].sort((a, b) => b.modes[mode]!.uncertainty - a.modes[mode]!.uncertainty).slice(0, top);
    const found = doubtful.filter((r) => worst.has(r.name)).length;
    const growth = mode === base ? '' : `, ×${(semi / baseSemi).toFixed(3)} of ${base}'s; grew by half on ${grown.length}${grown.length ? ` (${grown.slice(0, 6).join(', ')}${grown.length > 6 ? ', …' : ''})` : ''}`;
    const looks = meanOf(rows, (r) => r.modes[mode]!.looks ?? Number.NaN);
    const passes = Number.isFinite(looks) ? `; ${looks.toFixed(3)} model passes per photo` : '';
    console.log(`  ${mode.padEnd(9)}semi ${semi.toFixed(4)}${growth}; ${found} of the ${top} worst among the ${top} most uncertain${passes}`);
  }
}

function printFringe(groups: [string, ImageResult[]][]): void {
  console.log('');
  for (const line of DEFINITIONS.fringe) console.log(`  ${line}`);
  const modes = (['raw', 'alphaOnly', 'refined'] as const).filter((m) => groups[0][1].some((r) => r.fringe?.[m]));
  console.log(`  ${''.padEnd(27)}${''.padEnd(LABEL_WIDTH - 9)}${'n'.padStart(4)}${'white'.padStart(9)}${'black'.padStart(9)}`);
  for (const mode of modes) {
    for (const [index, [label, rows]] of groups.entries()) {
      const scored = rows.map((r) => r.fringe![mode]!);
      const head = (index === 0 ? MODE_LABEL[mode] : '').padEnd(27);
      console.log(`  ${head}${label.padEnd(LABEL_WIDTH - 9)}${String(rows.length).padStart(4)}${cell(meanOf(scored, (s) => s.white), 2)}${cell(meanOf(scored, (s) => s.black), 2)}`);
    }
  }
}
