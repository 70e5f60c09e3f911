/**
 * Mean of every `(2·radius + 1)²` window of a planar float map, the window clipped at the
 * borders (each output is divided by the number of pixels its window really covers, as in
 * the guided filter's reference code). One pass of running sums, so the cost does not depend
 * on the radius: row by row, a sum per column over the rows of the window is updated, and a
 * running sum along those column sums gives the row's windows. Sums are float64: in float32
 * they drift along a 1024-pixel row.
 *
 * `out` may be passed to reuse memory; it may not be `source`.
 *
 * @example boxMean(Float32Array.of(0, 0, 3), 3, 1, 1) // Float32Array [0, 1, 1.5]
 */
export function boxMean(source: Float32Array, width: number, height: number, radius: number, out: Float32Array = new Float32Array(width * height)): Float32Array {
  const n = width * height;
  if (source.length !== n || out.length !== n) throw new Error(`boxMean needs maps of ${width}×${height} values`);
  if (out === source) throw new Error('boxMean needs distinct source and out maps');
  const r = Math.max(0, Math.floor(radius));

  const columns = new Float64Array(width);
  // 1 / the window's width at each x: 2r + 1 except near the left and right borders.
  const inverseAcross = new Float64Array(width);
  for (let x = 0; x < width; x++) inverseAcross[x] = 1 / (Math.min(width - 1, x + r) - Math.max(0, x - r) + 1);
  for (let y = 0; y < r && y < height; y++) for (let x = 0, i = y * width; x < width; x++, i++) columns[x] += source[i];

  for (let y = 0; y < height; y++) {
    // The column sums move down one row: row y + r comes in, row y − r − 1 goes out.
    const add = (y + r) * width;
    const drop = (y - r - 1) * width;
    if (y + r < height && y > r) {
      for (let x = 0; x < width; x++) columns[x] += source[add + x] - source[drop + x];
    } else {
      if (y + r < height) for (let x = 0; x < width; x++) columns[x] += source[add + x];
      if (y > r) for (let x = 0; x < width; x++) columns[x] -= source[drop + x];
    }
    const inverseDown = 1 / (Math.min(height - 1, y + r) - Math.max(0, y - r) + 1);
    const row = y * width;
    // Along the row, in three stretches so that the middle loop has no branch: the window
    // clipped on the left, whole, clipped on the right.
    let sum = 0;
    for (let x = 0; x < r && x < width; x++) sum += columns[x];
    let x = 0;
    for (; x <= r && x < width; x++) {
      if (x + r < width) sum += columns[x + r];
      out[row + x] = sum * inverseAcross[x] * inverseDown;
    }
    const whole = inverseDown / (2 * r + 1);
    for (; x + r < width; x++) {
      sum += columns[x + r] - columns[x - r - 1];
      out[row + x] = sum * whole;
    }
    for (; x < width; x++) {
      sum -= columns[x - r - 1];
      out[row + x] = sum * inverseAcross[x] * inverseDown;
    }
  }
  return out;
}
