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

/**
 * The buffer behind `data` when `data` is all of it, to move to another thread instead of
 * copying; undefined for a view into a larger buffer, which would take the rest along.
 */
export function wholeBuffer(data: Uint8Array): ArrayBufferLike | undefined {
  return data.byteOffset === 0 && data.byteLength === data.buffer.byteLength ? data.buffer : undefined;
}
