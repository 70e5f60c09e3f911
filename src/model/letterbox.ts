import type { Box } from '../image/box.js';

// A model that takes its picture letterboxed (ModelProcessing.fit `letterbox`) sees the photo
// whole in its square, its aspect kept and the rest padded with black, and its mask is read
// back from the same place. The pipeline hands every model the photo stretched to the square
// (decode.ts), so the model thread turns that picture into the letterbox and the mask back
// into the stretched square: the pipeline around the model does not change. Both are a
// resampling along one axis only, since the stretch and the letterbox scale the photo's
// longer side alike.

/**
 * Where a photo of `aspect` (width / height) lies in a `size × size` letterbox: its longer
 * side fills the square, its shorter one is scaled alike and rounded down, centred, as
 * SkyTNT/anime-segmentation's `get_mask` (inference.py) places it.
 *
 * @example letterboxBox(1024, 2) // { left: 0, top: 256, width: 1024, height: 512 }
 */
export function letterboxBox(size: number, aspect: number): Box {
  if (!(aspect > 0) || !Number.isFinite(aspect)) throw new Error(`letterbox: aspect ${aspect} is not a positive number`);
  const width = aspect >= 1 ? size : Math.max(1, Math.floor(size * aspect));
  const height = aspect >= 1 ? Math.max(1, Math.floor(size / aspect)) : size;
  return { left: Math.floor((size - width) / 2), top: Math.floor((size - height) / 2), width, height };
}

/**
 * The letterboxed picture, from the same photo stretched to `size × size` RGB: the stretched
 * picture squeezed back along its shorter side into `box` (a triangle filter as wide as the
 * squeeze), black everywhere else.
 */
export function letterboxPicture(stretched: Uint8Array, size: number, box: Box): Uint8Array {
  const out = new Uint8Array(3 * size * size);
  const line = 3 * size;
  if (box.height < size) {
    const taps = axisTaps(size, box.height);
    for (let r = 0; r < box.height; r++) {
      const row = (box.top + r) * line;
      for (let i = 0; i < line; i++) {
        let sum = 0;
        for (let k = taps.start[r]; k < taps.start[r + 1]; k++) sum += taps.weight[k] * stretched[taps.index[k] * line + i];
        out[row + i] = Math.round(sum);
      }
    }
    return out;
  }
  const taps = axisTaps(size, box.width);
  for (let y = 0; y < size; y++) {
    const row = y * line;
    for (let x = 0; x < box.width; x++) {
      const to = row + 3 * (box.left + x);
      for (let c = 0; c < 3; c++) {
        let sum = 0;
        for (let k = taps.start[x]; k < taps.start[x + 1]; k++) sum += taps.weight[k] * stretched[row + 3 * taps.index[k] + c];
        out[to + c] = Math.round(sum);
      }
    }
  }
  return out;
}

/**
 * The mask in the stretched square, from the model's `size × size` probabilities over the
 * letterbox: the part in `box` stretched back along its shorter side (linear, as the
 * stretch enlarges it); the padding is dropped.
 */
export function unletterboxProbabilities(probabilities: Float32Array, size: number, box: Box): Float32Array {
  const out = new Float32Array(size * size);
  if (box.height < size) {
    const taps = axisTaps(box.height, size);
    for (let y = 0; y < size; y++) {
      for (let k = taps.start[y]; k < taps.start[y + 1]; k++) {
        const from = (box.top + taps.index[k]) * size;
        const w = taps.weight[k];
        for (let x = 0; x < size; x++) out[y * size + x] += w * probabilities[from + x];
      }
    }
    return out;
  }
  const taps = axisTaps(box.width, size);
  for (let y = 0; y < size; y++) {
    const row = y * size;
    for (let x = 0; x < size; x++) {
      let sum = 0;
      for (let k = taps.start[x]; k < taps.start[x + 1]; k++) sum += taps.weight[k] * probabilities[row + box.left + taps.index[k]];
      out[row + x] = sum;
    }
  }
  return out;
}

/** For each of `to` samples along an axis of `from`: the source indices and weights (a triangle filter, widened when shrinking), as a CSR list. */
function axisTaps(from: number, to: number): { start: Int32Array; index: Int32Array; weight: Float32Array } {
  const scale = from / to;
  const support = Math.max(1, scale);
  const start = new Int32Array(to + 1);
  const index: number[] = [];
  const weight: number[] = [];
  for (let i = 0; i < to; i++) {
    const centre = (i + 0.5) * scale - 0.5;
    const first = index.length;
    let total = 0;
    for (let j = Math.ceil(centre - support); j <= Math.floor(centre + support); j++) {
      const w = 1 - Math.abs(j - centre) / support;
      if (w <= 0) continue;
      index.push(Math.min(from - 1, Math.max(0, j)));
      weight.push(w);
      total += w;
    }
    for (let k = first; k < index.length; k++) weight[k] /= total;
    start[i + 1] = index.length;
  }
  return { start, index: Int32Array.from(index), weight: Float32Array.from(weight) };
}
