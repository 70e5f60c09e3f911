/**
 * What the main thread (`heic-thread.ts`) and an HEIC thread (`heic-worker.ts`) say to each
 * other; both sides import these types. A thread decodes one image at a time, answered once
 * with its id.
 */
import type { ThreadError } from '../threads/thread-error.js';
import type { DecodedPixels } from './photo-input.js';

/** An HEIC/HEIF file to decode, refused past `maxPixels` before its pixels are decoded. */
export interface HeicRequest {
  id: number;
  heic: Uint8Array;
  maxPixels: number;
  /** The EXIF Orientation still to apply once libheif has applied HEIF's own (`heif-orientation.ts`); 1: none. */
  orientation: number;
  /** A large photo: the thread lowers its own priority before decoding it, and is ended afterwards. */
  lowPriority: boolean;
}

/**
 * The image's pixels (in a SharedArrayBuffer, so not copied on the way), or why not; with
 * the bytes of WebAssembly memory the thread's decoder holds afterwards either way.
 */
export type HeicResult = { id: number; decoderBytes: number } & ({ pixels: DecodedPixels; error?: undefined } | { error: ThreadError; pixels?: undefined });
