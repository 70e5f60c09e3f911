/**
 * The green-screen test of the cut-out's colours, as plain functions over 8-bit arrays: a
 * soft-matte fixture's own pixels F are put over a known colour with the true matte α
 * (`I = α·F + (1 − α)·G`), the pipeline cuts that composite out again, and the cut-out is
 * laid over white and over black and compared with `α·F + (1 − α)·white` (or black). Where
 * the pipeline keeps the green in a semi-transparent pixel, the new background shows a
 * green fringe; where it gets the alpha wrong, the error shows too. Compared only where the
 * true matte is strictly between 0 and 255: the edge band where fringes live.
 */

/** The screen colour, a broadcast chroma green. */
export const SCREEN_GREEN: readonly [number, number, number] = [0, 177, 64];

/** `α·F + (1 − α)·G` for interleaved RGB `foreground` and one-channel `matte`, rounded. */
export function composeOver(foreground: Uint8Array, matte: Uint8Array, background: readonly [number, number, number]): Uint8Array {
  const out = new Uint8Array(foreground.length);
  for (let i = 0; i < matte.length; i++) {
    const a = matte[i] / 255;
    for (let c = 0; c < 3; c++) out[3 * i + c] = Math.round(a * foreground[3 * i + c] + (1 - a) * background[c]);
  }
  return out;
}

/** Mean |cut-out over white − truth over white| and the same over black, 0..255, over the true matte's partial pixels. */
export interface FringeScores {
  white: number;
  black: number;
  /** How many pixels were compared. */
  pixels: number;
}

/**
 * Scores an RGBA cut-out against the foreground and matte it was made from.
 *
 * @example fringeScores(rgba, foreground, matte).white // 0 for a perfect cut-out
 */
export function fringeScores(cutout: Uint8Array, foreground: Uint8Array, matte: Uint8Array): FringeScores {
  if (cutout.length !== 4 * matte.length || foreground.length !== 3 * matte.length) {
    throw new Error(`fringe needs RGBA, RGB and a matte of ${matte.length} pixels, got ${cutout.length}, ${foreground.length}`);
  }
  let white = 0;
  let black = 0;
  let pixels = 0;
  for (let i = 0; i < matte.length; i++) {
    if (matte[i] === 0 || matte[i] === 255) continue;
    const trueAlpha = matte[i] / 255;
    const cutAlpha = cutout[4 * i + 3] / 255;
    for (let c = 0; c < 3; c++) {
      const cut = cutAlpha * cutout[4 * i + c];
      const truth = trueAlpha * foreground[3 * i + c];
      white += Math.abs(cut + (1 - cutAlpha) * 255 - (truth + (1 - trueAlpha) * 255));
      black += Math.abs(cut - truth);
    }
    pixels++;
  }
  return pixels > 0 ? { white: white / (3 * pixels), black: black / (3 * pixels), pixels } : { white: 0, black: 0, pixels: 0 };
}
