import type { RemovalRequest } from '../removal/removal-service.js';
import { OptionValueError } from '../options/option-value-error.js';
import { optionsOf } from '../options/option-table.js';
import type { OutputOptions } from '../options/output-options.js';
import { isSet, readOptions } from '../options/read-options.js';

/** Where the photo comes from: exactly one of remove.bg's three sources. */
export type PhotoSource = { kind: 'file'; bytes: Uint8Array } | { kind: 'base64'; text: string } | { kind: 'url'; url: string };

/** A compatible request once read: the photo's source, and the removal it asks for. */
export interface CompatRequest {
  source: PhotoSource;
  /** A background image to fetch (`bg_image_url`), or sent along (`bg_image_file`). */
  background?: { kind: 'file'; bytes: Uint8Array } | { kind: 'url'; url: string };
  removal: RemovalRequest & { options: OutputOptions };
}

/** The fields of a request body: text (or JSON values) by name, and the uploaded files by part name. */
export interface CompatBody {
  fields: Readonly<Record<string, unknown>>;
  files: Readonly<Record<string, Uint8Array>>;
}

/**
 * remove.bg's parameters besides the photo's sources: the option table's remove.bg options
 * and the background's upload (docs/clients.md's table of them is checked against this list).
 */
export const REMOVEBG_PARAMETERS = [...optionsOf('removebg'), 'bg_image_file'] as const;

/**
 * Reads a `POST /v1.0/removebg` body, whichever way it came (multipart, urlencoded, JSON), as
 * remove.bg reads it: exactly one of `image_file`, `image_file_b64`, `image_url`; at most one
 * of `bg_image_file`, `bg_image_url`, `bg_color`; every option the table gives remove.bg's
 * wire, with its defaults (`size=preview`, `format=auto`), read as the native API reads them.
 *
 * @example readRemoveBgRequest({ fields: { image_url: 'https://…', size: 'full' }, files: {} })
 */
export function readRemoveBgRequest({ fields, files }: CompatBody): CompatRequest {
  const has = (name: string) => isSet(fields[name]);
  const sources = [files.image_file && 'image_file', has('image_file_b64') && 'image_file_b64', has('image_url') && 'image_url'].filter(Boolean);
  if (sources.length === 0) throw new OptionValueError('missing_source', 'Send one of image_file (an upload), image_file_b64 or image_url.');
  if (sources.length > 1) throw new OptionValueError('multiple_sources', `Send only one of image_file, image_file_b64 and image_url, not ${sources.join(' and ')}.`);
  const options = readOptions(fields, 'removebg', { backgroundFile: !!files.bg_image_file });
  const source: PhotoSource = files.image_file
    ? { kind: 'file', bytes: files.image_file }
    : has('image_file_b64')
      ? { kind: 'base64', text: stringOf('image_file_b64', fields.image_file_b64, 'missing_source') }
      : { kind: 'url', url: stringOf('image_url', fields.image_url, 'failed_image_download') };
  const background = files.bg_image_file
    ? ({ kind: 'file', bytes: files.bg_image_file } as const)
    : has('bg_image_url')
      ? ({ kind: 'url', url: stringOf('bg_image_url', fields.bg_image_url, 'failed_bg_download') } as const)
      : undefined;

  return { source, background, removal: { options } };
}

/**
 * Reads a Photoroom `POST /v1/segment` body (multipart `image_file`) and the options the table
 * gives Photoroom's wire: `format` png (default), jpg or webp; `channels`; `bg_color`; `size`
 * preview, medium, hd or full (default); `crop`; `despill`, accepted and without effect.
 */
export function readSegmentRequest({ fields, files }: CompatBody): CompatRequest {
  if (!files.image_file) throw new OptionValueError('missing_source', 'Send the image as a multipart file part named image_file.');
  return { source: { kind: 'file', bytes: files.image_file }, removal: { options: readOptions(fields, 'photoroom') } };
}

function stringOf(name: string, value: unknown, code: ConstructorParameters<typeof OptionValueError>[0]): string {
  if (typeof value === 'string') return value.trim();
  throw new OptionValueError(code, `${name} must be a string, not ${typeof value}.`);
}
