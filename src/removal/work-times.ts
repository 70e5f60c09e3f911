import { LARGE_PHOTO_PIXELS } from '../pipeline/photo-input.js';

/**
 * How long a removal takes once it holds its memory (the HEIC decode, the model's queue and
 * run, the finishing), learned from the removals that ended: a moving average for large
 * photos (over LARGE_PHOTO_PIXELS) and one for the rest, since a 49-megapixel HEIC takes
 * ten times an ordinary photo's time. The memory budget uses it to stop a request waiting
 * for memory once starting would no longer finish within its deadline (`patience`).
 *
 * @example
 * const patience = times.patience(pixels, deadline)
 * … times.record(pixels, performance.now() - admitted)
 */
export class WorkTimes {
  /**
   * Moving averages of the time and of its deviation from the average, as TCP keeps a round
   * trip's (RFC 6298). Before any removal ended: a pass and its finishing on a slow CPU, and a
   * large photo's work beside others'.
   */
  readonly #kinds = { small: { averageMs: 2_000, deviationMs: 500 }, large: { averageMs: 20_000, deviationMs: 5_000 } };

  /** Counts a removal of `pixels` (undefined: unknown, counted as large) whose work took `ms`. */
  record(pixels: number | undefined, ms: number): void {
    const kind = this.#kinds[kindOf(pixels)];
    kind.deviationMs = 0.75 * kind.deviationMs + 0.25 * Math.abs(ms - kind.averageMs);
    kind.averageMs = 0.75 * kind.averageMs + 0.25 * ms;
  }

  /** The time a removal of `pixels` should be given for its work, in ms: the average and twice its deviation. */
  expectedMs(pixels: number | undefined): number {
    const kind = this.#kinds[kindOf(pixels)];
    return kind.averageMs + 2 * kind.deviationMs;
  }

  /**
   * How long a removal of `pixels` due by `deadline` (a `performance.now()` time) may wait for
   * memory, and the Retry-After for one that could not: its expected work's time.
   */
  patience(pixels: number | undefined, deadline: number): { giveUpAt: number; retryAfterSeconds: number } {
    const expected = this.expectedMs(pixels);
    return { giveUpAt: deadline - expected, retryAfterSeconds: Math.max(1, Math.ceil(expected / 1000)) };
  }
}

const kindOf = (pixels: number | undefined) => (pixels === undefined || pixels > LARGE_PHOTO_PIXELS ? 'large' : 'small');
