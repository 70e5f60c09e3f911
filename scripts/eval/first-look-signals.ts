/**
 * Cheap signals from the model's first look at a photo (its one 8-bit mask, `side × side`), the
 * candidates `scripts/calibrate-auto.ts` ranks for deciding whether `quality=auto` takes a
 * second look. Each is "higher = more doubtful". The one the rule keeps lives in
 * `src/pipeline/second-look.ts`; the others stay here so the calibration can still show them.
 */

/** A level at or above this is subject, as everywhere else (the alpha threshold of 128). */
const SUBJECT = 128;
/** Levels strictly between these are "neither clearly in nor out" (p between 0.1 and 0.9). */
const CLEARLY_OUT = 26;
const CLEARLY_IN = 229;
/** The side of the grid the connected parts are counted on (nearest sample of the mask). */
const PARTS_GRID = 256;
/** A part smaller than this share of the subject's area is a speck, not a part. */
const PART_MIN_SHARE = 0.02;

export interface FirstLookSignals {
  /** The mask's own hesitation over the subject's area: `fast`'s X-Uncertainty (views.ts, uncertaintyOf). */
  hesitation: number;
  /** Pixels neither clearly in nor out (0.1 < p < 0.9), over the subject's area (p ≥ ½); 1 when there is no subject. */
  unsure: number;
  /** Connected parts of the subject (p ≥ ½, 4-connected, on a 256 grid) holding at least 2 % of its area, minus one; 0 for one part. */
  extraParts: number;
  /** Share of the frame's pixels (its outermost rows and columns) that are subject. */
  frameCut: number;
  /** One minus the subject's share of the picture: high for a small mask. */
  smallness: number;
  /** The hesitation summed over the whole picture, over its pixels (not the subject's area). */
  pictureDoubt: number;
  /** Faint pixels (0.1 < p < ½, the ghosts below the cut) over the subject's area. */
  faint: number;
  /** The hesitation over the picture's outer eighth on each side, over the subject pixels there (0 when none). */
  rimDoubt: number;
}

/** Every candidate signal of one first-look mask. */
export function firstLookSignals(mask: Uint8Array, side: number): FirstLookSignals {
  let subject = 0;
  let unsure = 0;
  let faint = 0;
  let doubt = 0;
  let rimDoubt = 0;
  let rimSubject = 0;
  const rim = side / 8;
  for (let i = 0; i < mask.length; i++) {
    const p = mask[i];
    const hesitation = 255 - Math.abs(2 * p - 255);
    if (p >= SUBJECT) subject++;
    else if (p > CLEARLY_OUT) faint++;
    if (p > CLEARLY_OUT && p < CLEARLY_IN) unsure++;
    doubt += hesitation;
    const x = i % side;
    const y = (i - x) / side;
    if (x < rim || y < rim || x >= side - rim || y >= side - rim) {
      rimDoubt += hesitation;
      if (p >= SUBJECT) rimSubject++;
    }
  }
  doubt /= 255;
  rimDoubt /= 255;
  let frame = 0;
  for (let k = 0; k < side; k++) {
    if (mask[k] >= SUBJECT) frame++;
    if (mask[(side - 1) * side + k] >= SUBJECT) frame++;
    if (mask[k * side] >= SUBJECT) frame++;
    if (mask[k * side + side - 1] >= SUBJECT) frame++;
  }
  return {
    hesitation: subject === 0 ? (doubt > 0 ? 1 : 0) : Math.min(1, doubt / subject),
    unsure: subject === 0 ? 1 : Math.min(1, unsure / subject),
    extraParts: Math.max(0, countParts(mask, side) - 1),
    frameCut: frame / (4 * side),
    smallness: 1 - subject / mask.length,
    pictureDoubt: doubt / mask.length,
    faint: subject === 0 ? 1 : Math.min(1, faint / subject),
    rimDoubt: rimSubject === 0 ? 0 : Math.min(1, rimDoubt / rimSubject),
  };
}

/** Parts of the subject big enough to count, on a {@link PARTS_GRID} grid sampled from the mask. */
function countParts(mask: Uint8Array, side: number): number {
  const grid = Math.min(PARTS_GRID, side);
  const step = side / grid;
  const on = new Uint8Array(grid * grid);
  let area = 0;
  for (let y = 0; y < grid; y++) {
    const row = Math.floor((y + 0.5) * step) * side;
    for (let x = 0; x < grid; x++) {
      if (mask[row + Math.floor((x + 0.5) * step)] >= SUBJECT) {
        on[y * grid + x] = 1;
        area++;
      }
    }
  }
  if (area === 0) return 0;
  const stack = new Int32Array(on.length);
  let parts = 0;
  for (let start = 0; start < on.length; start++) {
    if (on[start] !== 1) continue;
    let size = 0;
    let top = 0;
    stack[top++] = start;
    on[start] = 2;
    while (top > 0) {
      const i = stack[--top];
      size++;
      const x = i % grid;
      for (const j of [x > 0 ? i - 1 : -1, x < grid - 1 ? i + 1 : -1, i - grid, i + grid]) {
        if (j >= 0 && j < on.length && on[j] === 1) {
          on[j] = 2;
          stack[top++] = j;
        }
      }
    }
    if (size >= PART_MIN_SHARE * area) parts++;
  }
  return parts;
}
