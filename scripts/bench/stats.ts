/** Small statistics over samples in milliseconds (or any numbers). */

/** The median; NaN for no samples. */
export function median(values: readonly number[]): number {
  return percentile(values, 50);
}

/**
 * The p-th percentile by linear interpolation between the nearest ranks (numpy's default).
 * With few samples the high percentiles are close to the maximum: report the sample count.
 */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = (p / 100) * (sorted.length - 1);
  const low = Math.floor(rank);
  const high = Math.ceil(rank);
  return sorted[low] + (sorted[high] - sorted[low]) * (rank - low);
}

/** Rounds for display: no decimals past 100, one below. */
export function formatMs(value: number): string {
  if (!Number.isFinite(value)) return '–';
  return Math.abs(value) >= 100 ? value.toFixed(0) : value.toFixed(1);
}
