/** A rectangle of pixels: `left`, `top` and a size, in some picture's pixel coordinates. */
export interface Box {
  left: number;
  top: number;
  width: number;
  height: number;
}

/**
 * Where a step found visible pixels (alpha above 0): the alpha steps note them as they write
 * them, so the subject's box costs no second pass over the picture. Starts empty.
 *
 * @example const seen = new VisibleBounds(); seen.addRun(y, 10, 20); seen.box() // { left: 10, top: y, width: 10, height: 1 }
 */
/**
 * The least alpha that counts as part of the subject's box (crop, `X-Foreground-*`): 8 of 255,
 * about 3 %. A fainter pixel is invisible on any background, and the int8 model leaves a few
 * such pixels of alpha 1 or 2 far from the subject that would otherwise stretch the box.
 */
export const SUBJECT_ALPHA = 8;

export class VisibleBounds {
  left = Infinity;
  top = Infinity;
  /** One past the rightmost visible column. */
  right = -Infinity;
  /** One past the lowest visible row. */
  bottom = -Infinity;

  /** Columns `[from, to)` of row `y` are visible. */
  addRun(y: number, from: number, to: number): void {
    if (from >= to) return;
    if (from < this.left) this.left = from;
    if (to > this.right) this.right = to;
    if (y < this.top) this.top = y;
    if (y + 1 > this.bottom) this.bottom = y + 1;
  }

  /** The box around everything added, or undefined when nothing was. */
  box(): Box | undefined {
    return this.right > this.left ? { left: this.left, top: this.top, width: this.right - this.left, height: this.bottom - this.top } : undefined;
  }
}
