/**
 * Interleaved 8-bit pixels, the only currency between the pipeline's stages:
 * `data[(y * width + x) * channels + c]`.
 */
export interface RawImage {
  data: Uint8Array;
  width: number;
  height: number;
  channels: 1 | 3 | 4;
}
