/**
 * Mean of every `(2·radius + 1)²` window of a planar float map, the window clipped at the
 * borders (each output is divided by the number of pixels its window really covers, as in
 * the guided filter's reference code). Two running-sum passes, so the cost does not depend
 * on the radius. Running sums are float64: in float32 they drift along a 1024-pixel row.
 *
 * `out` and `scratch` may be passed to reuse memory; neither may be `source`.
 *
 * @example boxMean(Float32Array.of(0, 0, 3), 3, 1, 1) // Float32Array [0, 1, 1.5]
 */
export function boxMean(
  source: Float32Array,
  width: number,
  height: number,
  radius: number,
  out: Float32Array = new Float32Array(width * height),
  scratch: Float32Array = new Float32Array(width * height),
): Float32Array {
  const n = width * height;
  if (source.length !== n || out.length !== n || scratch.length !== n) throw new Error(`boxMean needs maps of ${width}×${height} values`);
  if (out === source || scratch === source || out === scratch) throw new Error('boxMean needs distinct source, out and scratch maps');
  const r = Math.max(0, Math.floor(radius));

  // Horizontal window means into scratch: a running sum, in three stretches so that the
  // inner loops have no branch (window clipped on the left, whole, clipped on the right).
  const whole = 1 / (2 * r + 1);
  for (let row = 0; row < n; row += width) {
    let sum = 0;
    for (let x = 0; x < r && x < width; x++) sum += source[row + x];
    let x = 0;
    for (; x <= r && x < width; x++) {
      if (x + r < width) sum += source[row + x + r];
      scratch[row + x] = sum / (Math.min(width - 1, x + r) + 1);
    }
    for (; x + r < width; x++) {
      sum += source[row + x + r] - source[row + x - r - 1];
      scratch[row + x] = sum * whole;
    }
    for (; x < width; x++) {
      sum -= source[row + x - r - 1];
      scratch[row + x] = sum / (width - (x - r));
    }
  }

  // Vertical window means of those, a row of column sums at a time.
  const columns = new Float64Array(width);
  for (let y = 0; y < r && y < height; y++) for (let x = 0, i = y * width; x < width; x++, i++) columns[x] += scratch[i];
  for (let y = 0; y < height; y++) {
    const add = (y + r) * width;
    const drop = (y - r - 1) * width;
    const row = y * width;
    const inverseDown = 1 / (Math.min(height - 1, y + r) - Math.max(0, y - r) + 1);
    if (y + r < height && y > r) {
      for (let x = 0; x < width; x++) {
        const sum = columns[x] + scratch[add + x] - scratch[drop + x];
        columns[x] = sum;
        out[row + x] = sum * inverseDown;
      }
      continue;
    }
    if (y + r < height) for (let x = 0; x < width; x++) columns[x] += scratch[add + x];
    if (y > r) for (let x = 0; x < width; x++) columns[x] -= scratch[drop + x];
    for (let x = 0; x < width; x++) out[row + x] = columns[x] * inverseDown;
  }
  return out;
}
