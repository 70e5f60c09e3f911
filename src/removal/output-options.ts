import { CutoutError } from '../errors.js';
import { MODEL_NAME } from '../model/model-presets.js';
import type { AnswerSpec, Length, RegionOfInterest, RequestedFormat, Rgba } from '../pipeline/answer-spec.js';
import type { Quality } from '../pipeline/views.js';
import { readPosition, readScale, readShadowOpacity, readShadowType, readSize } from './option-values.js';

/**
 * The output options a background request may send (remove.bg's names wherever remove.bg has
 * one), as JSON fields of the url and base64 endpoints or form fields of the upload. Unknown
 * fields are ignored; a bad value is 400 invalid_request naming the field and what it takes.
 */
export interface OutputOptions {
  /** As asked; absent lets the Accept header choose (`answer-format.ts`), else PNG. */
  format?: RequestedFormat;
  channels: 'rgba' | 'alpha';
  bgColor?: Rgba;
  bgImageUrl?: string;
  crop: boolean;
  cropMargin: Length;
  maxWidth?: number;
  maxHeight?: number;
  roi?: RegionOfInterest;
  /** The request's own `refine`, if it made a choice; otherwise CUTOUT_REFINE decides. */
  refine?: boolean;
  /** The request's own `quality` (`views.ts`), if it made a choice; otherwise CUTOUT_QUALITY decides. */
  quality?: Quality;
  /** `size`: at most this many pixels (remove.bg's sizes); absent: no cap. */
  maxPixels?: number;
  /** `scale` and `position`: the subject placed on the canvas. */
  placement?: AnswerSpec['placement'];
  /** `add_shadow`, `shadow_type`, `shadow_opacity`. */
  shadow?: AnswerSpec['shadow'];
  /** Which loaded model cuts (a CUTOUT_MODELS name); absent: the default. Checked against the loaded ones by the model service. */
  model?: string;
}

/** The options of a request that sent none: today's answer, a full-size transparent PNG. */
export const NO_OPTIONS: Readonly<OutputOptions> = Object.freeze({ channels: 'rgba', crop: false, cropMargin: { value: 0, unit: 'px' } as Length });

/** The largest side `max_width`, `max_height` and a pixel `crop_margin` may name. */
const MAX_SIDE = 65_535;
const FORMATS: Record<string, RequestedFormat> = { png: 'png', webp: 'webp', jpg: 'jpeg', jpeg: 'jpeg', auto: 'auto', zip: 'zip' };
const QUALITY: Record<string, Quality> = { fast: 'fast', best: 'best' };
const HEX_COLOUR = /^#?([0-9a-f]{3}|[0-9a-f]{6}|[0-9a-f]{8})$/i;
const LENGTH = /^(\d+(?:\.\d+)?)(px|%)?$/;

/**
 * Reads the output options from a JSON body (`json`: booleans and numbers as JSON has them)
 * or from form fields (`form`: every value a string, as a form sends it).
 *
 * @example parseOutputOptions({ format: 'jpg', bg_color: 'fff', crop: true, max_width: 2000 }, 'json')
 */
export function parseOutputOptions(fields: Readonly<Record<string, unknown>>, source: 'json' | 'form'): OutputOptions {
  const has = (name: string) => fields[name] !== undefined && !(source === 'form' && fields[name] === '');
  const options: OutputOptions = { ...NO_OPTIONS };
  if (has('format')) options.format = oneOf('format', fields.format, FORMATS, 'png, webp, jpg or jpeg, or auto or zip');
  if (has('channels')) options.channels = oneOf('channels', fields.channels, { rgba: 'rgba', alpha: 'alpha' } as const, 'rgba or alpha');
  if (has('bg_color')) options.bgColor = colour(fields.bg_color);
  if (has('bg_image_url')) options.bgImageUrl = url('bg_image_url', fields.bg_image_url);
  if (has('crop')) options.crop = boolean('crop', fields.crop, source);
  if (has('crop_margin')) options.cropMargin = cropMargin(fields.crop_margin, source);
  if (has('max_width')) options.maxWidth = positiveInteger('max_width', fields.max_width, source);
  if (has('max_height')) options.maxHeight = positiveInteger('max_height', fields.max_height, source);
  if (has('roi')) options.roi = regionOfInterest(fields.roi);
  if (has('refine')) options.refine = boolean('refine', fields.refine, source);
  if (has('quality')) options.quality = oneOf('quality', fields.quality, QUALITY, 'fast or best');
  if (has('size')) options.maxPixels = readSize(fields.size);
  const scale = has('scale') ? readScale(fields.scale) : undefined;
  // As on remove.bg, a scale without a position centres the subject.
  const position = has('position') ? readPosition(fields.position) : scale !== undefined ? { x: 0.5, y: 0.5 } : undefined;
  if (scale !== undefined || position) options.placement = { scale, position };
  if (has('add_shadow') && boolean('add_shadow', fields.add_shadow, source)) {
    options.shadow = { kind: has('shadow_type') ? readShadowType(fields.shadow_type) : 'drop', opacity: has('shadow_opacity') ? readShadowOpacity(fields.shadow_opacity) : 0.5 };
  }
  if (has('model')) options.model = modelName(fields.model);
  if (options.channels === 'alpha' && (options.bgColor || options.bgImageUrl)) {
    throw invalid('channels: alpha answers the mask alone, which has no background: leave out bg_color and bg_image_url, or ask for rgba.');
  }
  if (options.bgColor && options.bgImageUrl) throw invalid('Send bg_color or bg_image_url, not both.');
  return options;
}

/**
 * The answer the finishing steps make for these options, in `format` (the options' own, or
 * the one the Accept header chose).
 */
export function answerSpec(options: OutputOptions, format: RequestedFormat): AnswerSpec {
  return {
    format,
    channels: options.channels,
    background: options.bgColor ? { colour: options.bgColor } : options.bgImageUrl ? { image: true } : undefined,
    crop: options.crop ? { margin: options.cropMargin } : undefined,
    maxWidth: options.maxWidth,
    maxHeight: options.maxHeight,
    ...(options.maxPixels !== undefined && { maxPixels: options.maxPixels }),
    ...(options.placement && { placement: options.placement }),
    ...(options.shadow && { shadow: options.shadow }),
  };
}

function invalid(detail: string): CutoutError {
  return new CutoutError('invalid_request', detail);
}

const shown = (value: unknown) => JSON.stringify(value)?.slice(0, 60) ?? String(value);

function oneOf<T>(name: string, value: unknown, choices: Record<string, T>, accepted: string): T {
  if (typeof value === 'string' && Object.hasOwn(choices, value)) return choices[value];
  throw invalid(`${name} must be ${accepted}, not ${shown(value)}.`);
}

function boolean(name: string, value: unknown, source: 'json' | 'form'): boolean {
  if (typeof value === 'boolean' && source === 'json') return value;
  if (typeof value === 'string' && source === 'form' && /^(true|false)$/i.test(value.trim())) return value.trim().toLowerCase() === 'true';
  throw invalid(`${name} must be ${source === 'json' ? 'true or false (a JSON boolean)' : 'true or false'}, not ${shown(value)}.`);
}

function positiveInteger(name: string, value: unknown, source: 'json' | 'form'): number {
  const number = source === 'form' && typeof value === 'string' && /^\d+$/.test(value.trim()) ? Number(value.trim()) : value;
  if (typeof number === 'number' && Number.isInteger(number) && number >= 1 && number <= MAX_SIDE) return number;
  throw invalid(`${name} must be a whole number of pixels from 1 to ${MAX_SIDE}, not ${shown(value)}.`);
}

function colour(value: unknown): Rgba {
  const hex = typeof value === 'string' ? HEX_COLOUR.exec(value.trim())?.[1] : undefined;
  if (!hex) throw invalid(`bg_color must be a hex colour, rgb, rrggbb or rrggbbaa, with or without #, not ${shown(value)}.`);
  const full = hex.length === 3 ? [...hex].map((digit) => digit + digit).join('') : hex;
  const channel = (at: number) => parseInt(full.slice(at, at + 2), 16);
  return [channel(0), channel(2), channel(4), full.length === 8 ? channel(6) : 255];
}

function modelName(value: unknown): string {
  if (typeof value === 'string' && MODEL_NAME.test(value.trim())) return value.trim();
  throw invalid(`model must be the name of one of the server's models (lower-case letters, digits, '.', '_', '-'), not ${shown(value)}.`);
}

function url(name: string, value: unknown): string {
  if (typeof value === 'string' && value.length >= 1 && value.length <= 8192) return value;
  throw invalid(`${name} must be an http(s) URL of at most 8192 characters, not ${shown(value)}.`);
}

function cropMargin(value: unknown, source: 'json' | 'form'): Length {
  const text = typeof value === 'number' && source === 'json' ? String(value) : typeof value === 'string' ? value.trim() : undefined;
  const match = text === undefined ? null : LENGTH.exec(text);
  const length: Length | undefined = match ? { value: Number(match[1]), unit: match[2] === '%' ? '%' : 'px' } : undefined;
  const inRange = length && (length.unit === '%' ? length.value <= 100 : Number.isInteger(length.value) && length.value <= MAX_SIDE);
  if (!length || !inRange) throw invalid(`crop_margin must be whole pixels (30 or "30px") or a percent of the subject's box ("10%", at most 100%), not ${shown(value)}.`);
  return length;
}

function regionOfInterest(value: unknown): RegionOfInterest {
  const parts = typeof value === 'string' ? value.trim().split(/\s+/) : [];
  const lengths = parts.map((part) => LENGTH.exec(part));
  const [x1, y1, x2, y2] = lengths.map((match) => (match ? { value: Number(match[1]), unit: match[2] === '%' ? ('%' as const) : ('px' as const) } : undefined));
  if (parts.length !== 4 || !x1 || !y1 || !x2 || !y2 || [x1, y1, x2, y2].some((l) => l.unit === '%' && l.value > 100)) {
    throw invalid(`roi must be "x1 y1 x2 y2", four lengths in pixels or percent of the photo's side ("10% 5% 90% 100%"), not ${shown(value)}.`);
  }
  return { x1, y1, x2, y2 };
}
