import colourNames from 'color-name';
import type { Length, RegionOfInterest, RequestedFormat, Rgba, SideLengths } from '../pipeline/answer-spec.js';
import { OptionValueError, type OptionProblem } from './option-value-error.js';

/**
 * The values of the options remove.bg named and Cutout takes on both APIs, read as clients
 * send them: strings from forms, strings, numbers or booleans from JSON. Each reader returns
 * the value or throws an {@link OptionValueError} naming remove.bg's code for that
 * parameter; nothing else.
 */

/** Pixels in all of `size`'s caps; absent: the photo's own size (up to Cutout's pixel limit). */
const SIZES: Record<string, number | undefined> = {
  preview: 250_000,
  small: 250_000,
  regular: 250_000,
  medium: 1_500_000,
  hd: 4_000_000,
  full: undefined,
  '4k': undefined,
  auto: undefined,
  '50mp': undefined,
};
const FORMATS: Record<string, RequestedFormat> = { auto: 'auto', png: 'png', jpg: 'jpeg', jpeg: 'jpeg', webp: 'webp', zip: 'zip' };
const HEX_COLOUR = /^#?([0-9a-f]{3,4}|[0-9a-f]{6}|[0-9a-f]{8})$/i;
/** A length: a number with `px`, `%` or no unit (pixels). */
const LENGTH = /^(\d{1,9}(?:\.\d{1,6})?)(px|%)?$/i;
const PERCENT = /^(\d{1,3}(?:\.\d{1,6})?)%$/;
const MAX_MARGIN_PX = 500;
const MAX_MARGIN_PERCENT = 50;

const shown = (value: unknown) => (JSON.stringify(value) ?? String(value)).slice(0, 60);

/** A JSON number or a string, trimmed; anything else (an object, an array) is refused. */
function text(value: unknown, code: OptionProblem, name: string): string {
  if (typeof value === 'string') return value.trim();
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  throw new OptionValueError(code, `${name} must be a string, not ${shown(value)}.`);
}

/**
 * A boolean as clients send one: a JSON boolean, `"true"`/`"false"` in any case, `1`/`0` as
 * a number or a string.
 *
 * @example readBoolean('crop', '1') // true
 */
export function readBoolean(name: string, value: unknown): boolean {
  if (typeof value === 'boolean') return value;
  const word = typeof value === 'string' || typeof value === 'number' ? String(value).trim().toLowerCase() : undefined;
  if (word === 'true' || word === '1') return true;
  if (word === 'false' || word === '0') return false;
  throw new OptionValueError('invalid_request', `${name} must be true or false (or 1 or 0), not ${shown(value)}.`);
}

/**
 * remove.bg's `size` as a cap in pixels: `preview`, `small`, `regular` 0.25 MP, `medium`
 * 1.5 MP, `hd` 4 MP; `full`, `4k`, `auto`, `50MP` none (undefined).
 */
export function readSize(value: unknown): number | undefined {
  const word = text(value, 'invalid_size', 'size').toLowerCase();
  if (Object.hasOwn(SIZES, word)) return SIZES[word];
  throw new OptionValueError('invalid_size', `size must be preview, small, regular, medium, hd, full, 4k, auto or 50MP, not ${shown(value)}.`);
}

/** `format`: auto, png, jpg (jpeg), webp or zip. */
export function readFormat(value: unknown): RequestedFormat {
  const word = text(value, 'invalid_format', 'format').toLowerCase();
  if (Object.hasOwn(FORMATS, word)) return FORMATS[word];
  throw new OptionValueError('invalid_format', `format must be auto, png, jpg, webp or zip, not ${shown(value)}.`);
}

/** `channels`: rgba or alpha. */
export function readChannels(value: unknown): 'rgba' | 'alpha' {
  const word = text(value, 'invalid_channels', 'channels').toLowerCase();
  if (word === 'rgba' || word === 'alpha') return word;
  throw new OptionValueError('invalid_channels', `channels must be rgba or alpha, not ${shown(value)}.`);
}

function length(part: string): Length | undefined {
  const match = LENGTH.exec(part);
  return match ? { value: Number(match[1]), unit: match[2] === '%' ? '%' : 'px' } : undefined;
}

/**
 * `roi`: "x1 y1 x2 y2", each in pixels (`px` or no unit, so `0` is fine) or in percent of the
 * photo's side (at most 100 %). Where two corners are in the same unit, the second must lie
 * right of and below the first (else `roi_region_empty`); a region reaching past the photo is
 * cut to it when the photo is read.
 *
 * @example readRoi('0 0 100% 100%')
 */
export function readRoi(value: unknown): RegionOfInterest {
  const parts = text(value, 'invalid_roi', 'roi').split(/\s+/);
  const lengths = parts.map(length);
  const [x1, y1, x2, y2] = lengths;
  if (parts.length !== 4 || !x1 || !y1 || !x2 || !y2 || lengths.some((l) => l!.unit === '%' && l!.value > 100)) {
    throw new OptionValueError('invalid_roi', `roi must be "x1 y1 x2 y2", four lengths in px or % of the photo (at most 100%), such as "0 0 100% 100%", not ${shown(value)}.`);
  }
  const before = (a: Length, b: Length) => a.unit !== b.unit || a.value < b.value;
  if (!before(x1, x2) || !before(y1, y2)) throw new OptionValueError('roi_region_empty', `roi ${shown(value)} is empty: x1 must be less than x2 and y1 less than y2.`);
  return { x1, y1, x2, y2 };
}

/**
 * `crop_margin`: one value (every side), two (top and bottom, left and right) or four (top,
 * right, bottom, left), each in pixels (at most 500) or percent of the subject's box (at most
 * 50 %).
 *
 * @example readCropMargin('10% 30px') // { top: 10%, right: 30px, bottom: 10%, left: 30px }
 */
export function readCropMargin(value: unknown): SideLengths {
  const parts = text(value, 'invalid_crop_margin', 'crop_margin').split(/\s+/);
  const lengths = parts.map(length);
  const valid = (l: Length | undefined): l is Length => !!l && (l.unit === '%' ? l.value <= MAX_MARGIN_PERCENT : Number.isInteger(l.value) && l.value <= MAX_MARGIN_PX);
  if (![1, 2, 4].includes(parts.length) || !lengths.every(valid)) {
    throw new OptionValueError(
      'invalid_crop_margin',
      `crop_margin must be one, two or four lengths, each whole pixels up to ${MAX_MARGIN_PX} ("30px") or a percent of the subject up to ${MAX_MARGIN_PERCENT}% ("10%"), not ${shown(value)}.`,
    );
  }
  const [top, right = top, bottom = top, left = right] = lengths as Length[];
  return { top, right, bottom, left };
}

/** `scale`: `original` (undefined) or 10 % to 100 %, as a fraction. */
export function readScale(value: unknown): number | undefined {
  const word = text(value, 'invalid_scale', 'scale').toLowerCase();
  if (word === 'original') return undefined;
  const match = PERCENT.exec(word);
  const percent = match ? Number(match[1]) : NaN;
  if (percent >= 10 && percent <= 100) return percent / 100;
  throw new OptionValueError('invalid_scale', `scale must be original or a percent from 10% to 100%, not ${shown(value)}.`);
}

/**
 * `position`: `original` (undefined: where the subject was), `center`, one percent for both
 * axes or two (horizontal, vertical), each 0 % to 100 % of the free room.
 *
 * @example readPosition('0% 100%') // { x: 0, y: 1 }: bottom left
 */
export function readPosition(value: unknown): { x: number; y: number } | undefined {
  const word = text(value, 'invalid_position', 'position').toLowerCase();
  if (word === 'original') return undefined;
  if (word === 'center' || word === 'centre') return { x: 0.5, y: 0.5 };
  const parts = word.split(/\s+/).map((part) => PERCENT.exec(part));
  const fractions = parts.map((match) => (match ? Number(match[1]) / 100 : NaN));
  if ((fractions.length === 1 || fractions.length === 2) && fractions.every((f) => f >= 0 && f <= 1)) {
    const [x, y = x] = fractions;
    return { x, y };
  }
  throw new OptionValueError('invalid_position', `position must be original, center, "x%" or "x% y%" (0% to 100%), not ${shown(value)}.`);
}

/**
 * A colour: hex of 3, 4, 6 or 8 digits (with or without `#`; the 4th and 8th give the alpha)
 * or a CSS colour name (`red`, `rebeccapurple`).
 *
 * @example readColour('bg_color', 'f00c') // [255, 0, 0, 204]
 */
export function readColour(name: string, value: unknown): Rgba {
  const word = text(value, 'invalid_bg_color', name).toLowerCase();
  const hex = HEX_COLOUR.exec(word)?.[1];
  if (hex) {
    const full = hex.length <= 4 ? [...hex].map((digit) => digit + digit).join('') : hex;
    const channel = (at: number) => parseInt(full.slice(at, at + 2), 16);
    return [channel(0), channel(2), channel(4), full.length === 8 ? channel(6) : 255];
  }
  if (Object.hasOwn(colourNames, word)) {
    const [r, g, b] = colourNames[word];
    return [r, g, b, 255];
  }
  throw new OptionValueError('invalid_bg_color', `${name} must be a hex colour (rgb, rgba, rrggbb or rrggbbaa, # optional) or a CSS colour name, not ${shown(value)}.`);
}

/** `shadow_type`: drop, car or 3D (any case). */
export function readShadowType(value: unknown): 'drop' | 'car' | '3D' {
  const word = text(value, 'invalid_shadow', 'shadow_type').toLowerCase();
  if (word === 'drop' || word === 'car') return word;
  if (word === '3d') return '3D';
  throw new OptionValueError('invalid_shadow', `shadow_type must be drop, car or 3D, not ${shown(value)}.`);
}

/** `shadow_opacity`: a whole percent, 0 to 100, as a fraction. */
export function readShadowOpacity(value: unknown): number {
  const word = text(value, 'invalid_shadow', 'shadow_opacity');
  const percent = /^\d{1,3}%?$/.test(word) ? Number(word.replace('%', '')) : NaN;
  if (percent >= 0 && percent <= 100) return percent / 100;
  throw new OptionValueError('invalid_shadow', `shadow_opacity must be a whole number from 0 to 100, not ${shown(value)}.`);
}
