import type { RawImage } from '../image/raw-image.js';

/**
 * A photo decoded before the pipeline's decode, by a decoder sharp does not have (HEIC's, on
 * the HEIC threads, `heic-thread.ts`): RGBA, 8-bit, already the right way up, in memory
 * shared between threads, so that the model's decode on the main thread and the finishing on
 * the finish thread read the one copy instead of each holding its own.
 */
export interface DecodedPixels {
  /** RGBA pixels whose `data` views a SharedArrayBuffer. */
  image: RawImage & { channels: 4 };
  /**
   * Every alpha is 255. The finish thread then takes the pixels as its full-size photo as
   * they are (`decodePhoto`) and writes the cut-out's alpha into them, once the model's decode
   * is done with them.
   */
  opaque: boolean;
}

/**
 * A photo as the pipeline's stages take it (`decode.ts`, `remove-background.ts`, the finish
 * thread): its encoded bytes, or its pixels decoded already.
 */
export type PhotoInput = Uint8Array | DecodedPixels;

/**
 * A photo over this many pixels is large: its full-size work takes seconds, so the HEIC
 * threads and the model's queue keep small photos from waiting behind it.
 */
export const LARGE_PHOTO_PIXELS = 16e6;

/** True for pixels decoded already, false for encoded bytes. */
export function isDecodedPixels(photo: PhotoInput): photo is DecodedPixels {
  return !(photo instanceof Uint8Array);
}
