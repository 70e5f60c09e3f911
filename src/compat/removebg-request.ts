import { NO_OPTIONS, type OutputOptions } from '../removal/output-options.js';
import type { RemovalRequest } from '../removal/removal-service.js';
import type { RequestedFormat } from '../pipeline/answer-spec.js';
import { OptionValueError } from '../removal/option-value-error.js';
import {
  readBoolean,
  readChannels,
  readColour,
  readCropMargin,
  readFormat,
  readPosition,
  readRoi,
  readScale,
  readShadowOpacity,
  readShadowType,
  readSize,
} from '../removal/option-values.js';

/** Where the photo comes from: exactly one of remove.bg's three sources. */
export type PhotoSource = { kind: 'file'; bytes: Uint8Array } | { kind: 'base64'; text: string } | { kind: 'url'; url: string };

/** A compatible request once read: the photo's source, and the removal it asks for. */
export interface CompatRequest {
  source: PhotoSource;
  /** A background image to fetch (`bg_image_url`), or sent along (`bg_image_file`). */
  background?: { kind: 'file'; bytes: Uint8Array } | { kind: 'url'; url: string };
  removal: RemovalRequest & { options: OutputOptions; format: RequestedFormat };
}

/** The fields of a request body: text (or JSON values) by name, and the uploaded files by part name. */
export interface CompatBody {
  fields: Readonly<Record<string, unknown>>;
  files: Readonly<Record<string, Uint8Array>>;
}

/**
 * remove.bg's parameters besides the photo's sources, every one of which
 * {@link readRemoveBgRequest} reads (docs/clients.md's table of them is checked against this list).
 */
export const REMOVEBG_PARAMETERS = [
  'size', 'type', 'type_level', 'format', 'roi', 'crop', 'crop_margin', 'scale', 'position', 'channels',
  'add_shadow', 'shadow_type', 'shadow_opacity', 'semitransparency', 'bg_color', 'bg_image_url', 'bg_image_file',
] as const;

/** Unset, as remove.bg's clients mean it: absent, JSON null, or an empty (or blank) string. */
const isSet = (value: unknown) => value !== undefined && value !== null && !(typeof value === 'string' && value.trim() === '');

/**
 * Reads a `POST /v1.0/removebg` body, whichever way it came (multipart, urlencoded, JSON), as
 * remove.bg reads it: exactly one of `image_file`, `image_file_b64`, `image_url`; at most one
 * of `bg_image_file`, `bg_image_url`, `bg_color`; every documented parameter, an empty string
 * being an unset one. Defaults are remove.bg's: `size=preview`, `format=auto`,
 * `position=center` when `scale` is given. `type`, `type_level` and `semitransparency` are
 * checked and have no effect (Cutout has one general model, which keeps semi-transparency).
 *
 * @example readRemoveBgRequest({ fields: { image_url: 'https://…', size: 'full' }, files: {} })
 */
export function readRemoveBgRequest({ fields, files }: CompatBody): CompatRequest {
  const has = (name: string) => isSet(fields[name]);
  const sources = [files.image_file && 'image_file', has('image_file_b64') && 'image_file_b64', has('image_url') && 'image_url'].filter(Boolean);
  if (sources.length === 0) throw new OptionValueError('missing_source', 'Send one of image_file (an upload), image_file_b64 or image_url.');
  if (sources.length > 1) throw new OptionValueError('multiple_sources', `Send only one of image_file, image_file_b64 and image_url, not ${sources.join(' and ')}.`);
  const backgrounds = [files.bg_image_file && 'bg_image_file', has('bg_image_url') && 'bg_image_url', has('bg_color') && 'bg_color'].filter(Boolean);
  if (backgrounds.length > 1) throw new OptionValueError('multiple_bg_sources', `Send at most one of bg_image_file, bg_image_url and bg_color, not ${backgrounds.join(' and ')}.`);

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

  const options: OutputOptions = { ...NO_OPTIONS };
  if (has('channels')) options.channels = readChannels(fields.channels);
  if (has('bg_color')) options.bgColor = readColour('bg_color', fields.bg_color);
  if (has('roi')) options.roi = readRoi(fields.roi);
  if (has('crop')) options.crop = readBoolean('crop', fields.crop);
  if (options.channels === 'alpha' && (options.bgColor || background)) {
    throw new OptionValueError('invalid_channels', 'channels=alpha answers the mask alone, which has no background: leave out bg_color, bg_image_url and bg_image_file, or ask for rgba.');
  }
  const format = has('format') ? readFormat(fields.format) : 'auto';
  const maxPixels = has('size') ? readSize(fields.size) : readSize('preview');
  const scale = has('scale') ? readScale(fields.scale) : undefined;
  const position = has('position') ? readPosition(fields.position) : scale !== undefined ? { x: 0.5, y: 0.5 } : undefined;
  const margin = has('crop_margin') ? readCropMargin(fields.crop_margin) : undefined;
  const shadow = has('add_shadow') && readBoolean('add_shadow', fields.add_shadow);
  const shadowKind = has('shadow_type') ? readShadowType(fields.shadow_type) : 'drop';
  const shadowOpacity = has('shadow_opacity') ? readShadowOpacity(fields.shadow_opacity) : 0.5;
  if (has('semitransparency')) readBoolean('semitransparency', fields.semitransparency);
  for (const name of ['type', 'type_level']) if (has(name)) stringOf(name, fields[name], 'invalid_request');

  return {
    source,
    background,
    removal: {
      options,
      format,
      finishing: {
        maxPixels,
        ...(scale !== undefined || position ? { placement: { scale, position } } : {}),
        ...(shadow ? { shadow: { opacity: shadowOpacity, kind: shadowKind } } : {}),
        ...(options.crop && margin ? { crop: { margin } } : {}),
      },
    },
  };
}

/**
 * Reads a Photoroom `POST /v1/segment` body (multipart `image_file`): `format` png (default),
 * jpg or webp; `channels`; `bg_color` (hex or a CSS name); `size` preview, medium, hd or full
 * (default); `crop`; `despill`, accepted and without effect.
 */
export function readSegmentRequest({ fields, files }: CompatBody): CompatRequest {
  const has = (name: string) => isSet(fields[name]);
  if (!files.image_file) throw new OptionValueError('missing_source', 'Send the image as a multipart file part named image_file.');
  const options: OutputOptions = { ...NO_OPTIONS };
  if (has('channels')) options.channels = readChannels(fields.channels);
  if (has('bg_color')) options.bgColor = readColour('bg_color', fields.bg_color);
  if (has('crop')) options.crop = readBoolean('crop', fields.crop);
  if (has('despill')) readBoolean('despill', fields.despill);
  if (options.channels === 'alpha' && options.bgColor) throw new OptionValueError('invalid_channels', 'channels=alpha answers the mask alone: leave out bg_color, or ask for rgba.');
  const format = has('format') ? readFormat(fields.format) : 'png';
  if (format === 'auto' || format === 'zip') throw new OptionValueError('invalid_format', `format must be png, jpg or webp, not "${String(fields.format)}".`);
  const size = has('size') ? String(fields.size).trim().toLowerCase() : 'full';
  if (!['preview', 'medium', 'hd', 'full'].includes(size)) throw new OptionValueError('invalid_size', `size must be preview, medium, hd or full, not "${String(fields.size).slice(0, 60)}".`);
  return { source: { kind: 'file', bytes: files.image_file }, removal: { options, format, finishing: { maxPixels: readSize(size) } } };
}

function stringOf(name: string, value: unknown, code: ConstructorParameters<typeof OptionValueError>[0]): string {
  if (typeof value === 'string') return value.trim();
  throw new OptionValueError(code, `${name} must be a string, not ${typeof value}.`);
}
