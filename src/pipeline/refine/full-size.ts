import { SUBJECT_ALPHA, type VisibleBounds } from '../../image/box.js';
import { foregroundColour, type ColourEstimates } from './foreground-blur-fusion.js';
import type { GuidedFilterCoefficients } from './guided-filter.js';
import type { RawImage } from '../../image/raw-image.js';

/** What {@link applyAtFullSize} needs from the grid, all maps of the same grid size. */
export interface GridResult {
  coefficients: GuidedFilterCoefficients;
  /**
   * The refined alpha on the grid, 0..255. A grid cell whose four corners are all 0 (or all
   * 255) is that value at full size too and is filled without arithmetic: after refinement
   * most of a photo is such cells, so the per-pixel work follows the subject's outline.
   */
  alpha: Uint8Array;
  /** Blur-fusion estimates; without them the colours are left as they are. */
  colour?: ColourEstimates;
}

/**
 * The fast guided filter's last step (He & Sun, 2015) and blur fusion's last step (Forte &
 * Pitié, 2021) at the photo's own size. Each pixel's coefficients and colour estimates are
 * interpolated bilinearly from the grid (pixel centres aligned, as sharp resizes); its alpha
 * is `a·I + b` of its own colour I; where that alpha is strictly between 0 and 255 its colour
 * becomes `F = F̂ + α·(I − α·F̂ − (1 − α)·B̂)`, clipped, so that `α·F + (1 − α)·B̂ ≈ I`.
 * Pixels whose alpha is 0 are written black (alpha included), so that the encode finds long
 * runs of zeros. Rewrites `image.data` in place. An RGB photo gets a new one-channel alpha,
 * which is returned; an RGBA photo gets its alpha written into its fourth channel, ready to
 * encode, and is itself returned. That alpha must come in opaque (255), as `decodeImage`
 * with `opaqueAlpha` gives it: wholly opaque cells, most of a subject, are not written at all.
 * `visible`, when given, is told every pixel whose alpha is at least SUBJECT_ALPHA, as it is written.
 */
export function applyAtFullSize(image: RawImage, grid: GridResult, visible?: VisibleBounds): RawImage {
  const { width, height, data, channels } = image;
  if (channels !== 3 && channels !== 4) throw new Error(`applyAtFullSize needs an RGB or RGBA photo, got ${channels} channels`);
  const gw = grid.coefficients.width;
  const gh = grid.coefficients.height;
  const ownAlpha = channels === 4;
  // Pixel p's alpha is alpha[p * alphaStride + alphaAt]: in the photo itself, or beside it.
  const alpha = ownAlpha ? data : new Uint8Array(width * height);
  const alphaStride = ownAlpha ? 4 : 1;
  const alphaAt = ownAlpha ? 3 : 0;
  const { ar, ag, ab, b } = grid.coefficients;
  const estimates = grid.colour;

  const columns = axis(width, gw);
  const rows = axis(height, gh);
  const runs = cellRuns(grid.alpha, gw, gh);
  // Full-size x where grid column c starts: x in [start[c], start[c + 1]) interpolates from c and c + 1.
  const start = new Int32Array(gw + 1).fill(width);
  for (let x = width - 1; x >= 0; x--) start[columns.low[x]] = x;
  for (let c = gw - 1; c >= 0; c--) start[c] = Math.min(start[c], start[c + 1]);

  const columnLow = columns.low;
  const columnHigh = columns.high;
  const columnWeight = columns.weight;
  // One grid row's worth of coefficients (and estimates), interpolated down to this photo
  // row over the mixed cells; then each pixel interpolates across between two of them.
  const lineA = [new Float32Array(gw), new Float32Array(gw), new Float32Array(gw), new Float32Array(gw)];
  const [lineR, lineG, lineB, lineOffset] = lineA;
  const lineColour = Array.from({ length: 6 }, () => new Float32Array(gw));
  const [lineFr, lineFg, lineFb, lineBr, lineBg, lineBb] = lineColour;
  const gridMaps = [ar, ag, ab, b];
  const colourMaps = estimates ? [...estimates.foreground, ...estimates.background] : [];
  for (let y = 0; y < height; y++) {
    const top = rows.low[y] * gw;
    const bottom = rows.high[y] * gw;
    const wy = rows.weight[y];
    const row = y * width;
    for (const { state, first, end } of runs[rows.low[y]]) {
      const from = start[first];
      const to = start[end];
      if (state !== MIXED) {
        if (from >= to) continue;
        if (state === 0) data.fill(0, channels * (row + from), channels * (row + to));
        else {
          if (!ownAlpha) alpha.fill(state, row + from, row + to);
          visible?.addRun(y, from, to);
        }
        continue;
      }
      let firstVisible = -1;
      let lastVisible = -1;
      const last = Math.min(end, gw - 1);
      for (let m = 0; m < 4; m++) interpolateRows(gridMaps[m], lineA[m], top, bottom, wy, first, last);
      for (let m = 0; m < colourMaps.length; m++) interpolateRows(colourMaps[m], lineColour[m], top, bottom, wy, first, last);
      for (let x = from; x < to; x++) {
        const wx = columnWeight[x];
        const left = columnLow[x];
        const right = columnHigh[x];
        const p = row + x;
        const j = channels * p;
        const red = data[j] * INVERSE_255;
        const green = data[j + 1] * INVERSE_255;
        const blue = data[j + 2] * INVERSE_255;
        let a =
          (lineR[left] + wx * (lineR[right] - lineR[left])) * red +
          (lineG[left] + wx * (lineG[right] - lineG[left])) * green +
          (lineB[left] + wx * (lineB[right] - lineB[left])) * blue +
          (lineOffset[left] + wx * (lineOffset[right] - lineOffset[left]));
        a = a < 0 ? 0 : a > 1 ? 1 : a;
        // `(v + 0.5) | 0` rounds a non-negative v, and costs a fraction of Math.round in this loop.
        const value = (a * 255 + 0.5) | 0;
        alpha[p * alphaStride + alphaAt] = value;
        if (value === 0) {
          data[j] = data[j + 1] = data[j + 2] = 0;
          continue;
        }
        if (value >= SUBJECT_ALPHA) {
          if (firstVisible < 0) firstVisible = x;
          lastVisible = x;
        }
        if (estimates === undefined || value === 255) continue;
        data[j] = (255 * foregroundColour(red, a, lerp(lineFr, left, right, wx), lerp(lineBr, left, right, wx)) + 0.5) | 0;
        data[j + 1] = (255 * foregroundColour(green, a, lerp(lineFg, left, right, wx), lerp(lineBg, left, right, wx)) + 0.5) | 0;
        data[j + 2] = (255 * foregroundColour(blue, a, lerp(lineFb, left, right, wx), lerp(lineBb, left, right, wx)) + 0.5) | 0;
      }
      if (firstVisible >= 0) visible?.addRun(y, firstVisible, lastVisible + 1);
    }
  }
  return ownAlpha ? image : { data: alpha, width, height, channels: 1 };
}

const MIXED = 1;
const INVERSE_255 = 1 / 255;

/** `line[c] = map[top + c] + wy·(map[bottom + c] − map[top + c])` for c in first..last. */
function interpolateRows(map: Float32Array, line: Float32Array, top: number, bottom: number, wy: number, first: number, last: number): void {
  for (let c = first; c <= last; c++) line[c] = map[top + c] + wy * (map[bottom + c] - map[top + c]);
}

function lerp(line: Float32Array, left: number, right: number, weight: number): number {
  return line[left] + weight * (line[right] - line[left]);
}

/** A stretch of cells `[first, end)` of one grid row with the same state: 0, 255 or MIXED. */
interface CellRun {
  state: number;
  first: number;
  end: number;
}

/**
 * For each grid row, its cells (a grid pixel with its right, lower and lower-right
 * neighbours) as runs: all four 0, all four 255, or anything else (MIXED).
 */
function cellRuns(alpha: Uint8Array, gw: number, gh: number): CellRun[][] {
  const runs: CellRun[][] = [];
  for (let y = 0; y < gh; y++) {
    const y1 = Math.min(y + 1, gh - 1);
    const row: CellRun[] = [];
    for (let x = 0; x < gw; x++) {
      const x1 = Math.min(x + 1, gw - 1);
      const v = alpha[y * gw + x];
      const uniform = (v === 0 || v === 255) && alpha[y * gw + x1] === v && alpha[y1 * gw + x] === v && alpha[y1 * gw + x1] === v;
      const state = uniform ? v : MIXED;
      const last = row[row.length - 1];
      if (last?.state === state) last.end = x + 1;
      else row.push({ state, first: x, end: x + 1 });
    }
    runs.push(row);
  }
  return runs;
}

/** Per full-size coordinate: the two grid coordinates around its centre and the weight of the second. */
function axis(size: number, gridSize: number): { low: Int32Array; high: Int32Array; weight: Float32Array } {
  const low = new Int32Array(size);
  const high = new Int32Array(size);
  const weight = new Float32Array(size);
  const scale = gridSize / size;
  for (let i = 0; i < size; i++) {
    const g = Math.min(gridSize - 1, Math.max(0, (i + 0.5) * scale - 0.5));
    const g0 = Math.floor(g);
    low[i] = g0;
    high[i] = Math.min(g0 + 1, gridSize - 1);
    weight[i] = g - g0;
  }
  return { low, high, weight };
}
