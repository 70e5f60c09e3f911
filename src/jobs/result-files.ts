import type { EncodedFormat } from '../pipeline/answer-spec.js';

/** The file extension of each encoding, in result paths and zip entries. */
const EXTENSIONS: Readonly<Record<EncodedFormat, string>> = { png: 'png', webp: 'webp', jpeg: 'jpg', zip: 'zip' };

/** A job's folder, relative to the data directory. */
export const jobFolder = (jobId: string): string => `jobs/${jobId}`;

/** Where an item's result is kept, relative to the data directory: `jobs/<job>/<index>.<ext>`. */
export const resultPath = (jobId: string, index: number, format: EncodedFormat): string => `${jobFolder(jobId)}/${index}.${EXTENSIONS[format]}`;

/** The extension of a result path, as written by {@link resultPath}. */
const extensionOf = (path: string): string => path.slice(path.lastIndexOf('.') + 1);

/**
 * A file name for an item's result, as downloads and the zip give it: the client's `id` with
 * anything but letters, digits, `.`, `_` and `-` replaced by `_` (so no `/`, `..` or
 * control character reaches a path), or the item's index when there is no id.
 *
 * @example resultFileName('sku 1/../x', 3, 'jobs/j/3.png') // 'sku_1_.._x.png'
 */
export function resultFileName(clientId: string | null, index: number, path: string): string {
  const cleaned = (clientId ?? '').replace(/[^A-Za-z0-9._-]/g, '_').replace(/^[.]+/, '').slice(0, 100);
  return `${cleaned === '' ? String(index) : cleaned}.${extensionOf(path)}`;
}
