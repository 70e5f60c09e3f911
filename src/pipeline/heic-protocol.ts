/**
 * What the main thread (`heic-thread.ts`) and the HEIC thread (`heic-worker.ts`) say to each
 * other; both sides import these types. One request per image, answered once with its id.
 */
import type { ThreadError } from '../threads/thread-error.js';

/** An HEIC/HEIF file to decode, refused past `maxPixels` before its pixels are decoded. */
export interface HeicRequest {
  id: number;
  heic: Uint8Array;
  maxPixels: number;
}

/** The image as an uncompressed TIFF (which the pipeline's decode reads at once), or why not. */
export type HeicResult = { id: number; tiff: Uint8Array; error?: undefined } | { id: number; error: ThreadError; tiff?: undefined };
