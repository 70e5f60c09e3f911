import type { RawImage } from '../../image/raw-image.js';

/**
 * The model's input or mask at the size the refinement's window work runs on: halved (2×2
 * means) until no side is above `maxSide`. The windows need the mask's detail, not the
 * photo's: the full-size step puts the photo's own detail back, so a grid much smaller than
 * the model's 1024 scores as well at a fraction of the cost (docs/quality.md).
 *
 * @example toGrid(modelInput, 512) // 512×512 from 1024×1024
 */
export function toGrid(image: RawImage, maxSide: number): RawImage {
  let grid = image;
  while (Math.max(grid.width, grid.height) > maxSide && grid.width > 1 && grid.height > 1) grid = halve(grid);
  return grid;
}

/** 2×2 means (a last odd row or column is dropped). */
export function halve(image: RawImage): RawImage {
  const { data, channels } = image;
  const width = image.width >> 1;
  const height = image.height >> 1;
  const out = new Uint8Array(width * height * channels);
  const stride = image.width * channels;
  const rowLength = width * channels;
  for (let y = 0; y < height; y++) {
    const top = 2 * y * stride;
    const bottom = top + stride;
    const row = y * rowLength;
    for (let x = 0; x < width; x++) {
      const at = 2 * x * channels;
      for (let c = 0; c < channels; c++) {
        const i = at + c;
        out[row + x * channels + c] = (data[top + i] + data[top + i + channels] + data[bottom + i] + data[bottom + i + channels] + 2) >> 2;
      }
    }
  }
  return { data: out, width, height, channels };
}
