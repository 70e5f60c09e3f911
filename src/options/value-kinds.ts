import colourNames from 'color-name';
import Type, { type TSchema } from 'typebox';
import type { Length, RegionOfInterest, Rgba, SideLengths } from '../pipeline/answer-spec.js';
import { OptionValueError, type OptionProblem } from './option-value-error.js';

/**
 * The kinds of value an option takes, each read one way on every wire: a string from a form,
 * a string, number or boolean from JSON. A kind reads a value or throws an
 * {@link OptionValueError} that names the option, says what it takes, and carries the problem
 * in remove.bg's words (its error code) for the compatible routes; it also says how the value
 * looks in JSON (for the OpenAPI document and the request schema), on the command line and in
 * the SDK's types. Like sharp's `is.js`: one small set of checks, so that the same value gets
 * the same verdict and the same message wherever it is sent.
 */
export interface ValueKind<T> {
  /** Reads the value of option `name`; throws an OptionValueError when it is not one. */
  read(name: string, value: unknown): T;
  /**
   * How JSON sends it, limits and patterns included: the OpenAPI document's field, the SDK's
   * type (`scripts/client-options.ts`) and the CLI's flag all come from it. `read` takes
   * everything it allows (test/options-on-every-wire.test.ts checks that) and more: text from
   * forms, any case, whitespace around, `1`/`0` for booleans.
   */
  readonly schema: TSchema;
  /** A command-line flag's parseArgs type, from the schema: a switch for a boolean, else a value. */
  readonly flag: 'boolean' | 'string';
  /** What it takes, in words, for its error message and the docs' option table. */
  readonly takes: string;
  /** remove.bg's code for a bad value of this kind. */
  readonly problem: OptionProblem;
}

/** A kind from its reader, its schema, what it takes in words and its problem; its flag follows from the schema. */
function kind<T>(parts: Omit<ValueKind<T>, 'flag'>): ValueKind<T> {
  return { ...parts, flag: (parts.schema as { type?: unknown }).type === 'boolean' ? 'boolean' : 'string' };
}

const shown = (value: unknown) => (JSON.stringify(value) ?? String(value)).slice(0, 60);
/** A length: a number with `px`, `%` or no unit (pixels). */
const LENGTH = /^(\d{1,9}(?:\.\d{1,6})?)(px|%)?$/i;
const PERCENT = /^(\d{1,3}(?:\.\d{1,6})?)%$/;
const HEX_COLOUR = /^#?([0-9a-f]{3,4}|[0-9a-f]{6}|[0-9a-f]{8})$/i;

/**
 * A regular expression's source (no anchors) for the whole numbers `min` to `max` written
 * without leading zeros, so that a schema's pattern can carry a kind's limits.
 *
 * @example wholeRange(0, 500) // matches '0', '42', '500'; not '501', '007'
 */
export function wholeRange(min: number, max: number): string {
  const alternatives: string[] = [];
  for (let digits = String(min).length; digits <= String(max).length; digits++) {
    const lo = digits === String(min).length ? String(min) : `1${'0'.repeat(digits - 1)}`;
    const hi = digits === String(max).length ? String(max) : '9'.repeat(digits);
    alternatives.push(sameLengthRange(lo, hi));
  }
  return `(?:${alternatives.join('|')})`;
}

/** Numbers from `lo` to `hi`, both of the same number of digits, digit by digit. */
function sameLengthRange(lo: string, hi: string): string {
  if (lo === hi) return lo;
  const rest = lo.length - 1;
  if (/^0*$/.test(lo.slice(1)) && /^9*$/.test(hi.slice(1))) return `[${lo[0]}-${hi[0]}]${rest ? `\\d{${rest}}` : ''}`;
  if (lo[0] === hi[0]) return `${lo[0]}(?:${sameLengthRange(lo.slice(1), hi.slice(1))})`;
  const parts = [`${lo[0]}(?:${sameLengthRange(lo.slice(1), '9'.repeat(rest))})`];
  if (Number(hi[0]) - Number(lo[0]) > 1) parts.push(`[${Number(lo[0]) + 1}-${Number(hi[0]) - 1}]\\d{${rest}}`);
  parts.push(`${hi[0]}(?:${sameLengthRange('0'.repeat(rest), hi.slice(1))})`);
  return parts.join('|');
}

/** A number from `min` to `max` with up to six decimals, as the readers take it. */
const decimalRange = (min: number, max: number) => `(?:${wholeRange(min, max - 1)}(?:\\.\\d{1,6})?|${max}(?:\\.0{1,6})?)`;

/** A JSON number or a string, trimmed; anything else (an object, an array, a boolean) is refused. */
function text(name: string, value: unknown, problem: OptionProblem): string {
  if (typeof value === 'string') return value.trim();
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  throw new OptionValueError(problem, `${name} must be a string, not ${shown(value)}.`);
}

function lengthOf(part: string): Length | undefined {
  const match = LENGTH.exec(part);
  return match ? { value: Number(match[1]), unit: match[2] === '%' ? '%' : 'px' } : undefined;
}

/**
 * A switch: a JSON boolean, `true`/`false` in any case, or `1`/`0` as a number or a string.
 *
 * @example boolean().read('crop', '1') // true
 */
export function boolean(problem: OptionProblem = 'invalid_request'): ValueKind<boolean> {
  const takes = 'true or false (or 1 or 0)';
  return kind({
    read(name, value) {
      if (typeof value === 'boolean') return value;
      const word = typeof value === 'string' || typeof value === 'number' ? String(value).trim().toLowerCase() : undefined;
      if (word === 'true' || word === '1') return true;
      if (word === 'false' || word === '0') return false;
      throw new OptionValueError(problem, `${name} must be ${takes}, not ${shown(value)}.`);
    },
    schema: Type.Boolean(),
    takes: '`true`, `false`',
    problem,
  });
}

/**
 * One word of a list, in any case, each word mapped to its meaning.
 *
 * @example choice({ jpg: 'jpeg', png: 'png' }, 'invalid_format').read('format', 'JPG') // 'jpeg'
 */
export function choice<T>(meanings: Readonly<Record<string, T>>, problem: OptionProblem = 'invalid_request'): ValueKind<T> & { words: readonly string[] } {
  const words = Object.keys(meanings);
  const listed = `${words.slice(0, -1).join(', ')} or ${words.at(-1)}`;
  const reader = kind<T>({
    read(name, value) {
      const word = text(name, value, problem).toLowerCase();
      const key = words.find((known) => known.toLowerCase() === word);
      if (key !== undefined) return meanings[key];
      throw new OptionValueError(problem, `${name} must be ${listed}, not ${shown(value)}.`);
    },
    schema: Type.String({ enum: [...words] }),
    takes: words.map((word) => `\`${word}\``).join(', '),
    problem,
  });
  return { ...reader, words };
}

/**
 * A whole number in a range, as a JSON number or a string of digits.
 *
 * @example wholeNumber(1, 65_535, 'pixels').read('max_width', '640') // 640
 */
export function wholeNumber(min: number, max: number, unit: string): ValueKind<number> {
  return kind({
    read(name, value) {
      const number = typeof value === 'string' && /^\d{1,9}$/.test(value.trim()) ? Number(value.trim()) : value;
      if (typeof number === 'number' && Number.isInteger(number) && number >= min && number <= max) return number;
      throw new OptionValueError('invalid_request', `${name} must be a whole number of ${unit} from ${min} to ${max}, not ${shown(value)}.`);
    },
    schema: Type.Integer({ minimum: min, maximum: max }),
    takes: `whole ${unit}, ${min}–${max}`,
    problem: 'invalid_request',
  });
}

/**
 * A colour: hex of 3, 4, 6 or 8 digits (with or without `#`; the 4th and 8th give the alpha)
 * or a CSS colour name (`red`, `rebeccapurple`).
 *
 * @example colour().read('bg_color', 'f00c') // [255, 0, 0, 204]
 */
export function colour(problem: OptionProblem = 'invalid_bg_color'): ValueKind<Rgba> {
  return kind({
    read(name, value) {
      const word = text(name, value, problem).toLowerCase();
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
      throw new OptionValueError(problem, `${name} must be a hex colour (rgb, rgba, rrggbb or rrggbbaa, # optional) or a CSS colour name, not ${shown(value)}.`);
    },
    schema: Type.Union([Type.String({ pattern: HEX_COLOUR.source.replaceAll('a-f', 'a-fA-F') }), Type.String({ enum: Object.keys(colourNames) })]),
    takes: 'hex `rgb`, `rgba`, `rrggbb` or `rrggbbaa` (`#` optional), or a CSS colour name (`red`)',
    problem,
  });
}

/**
 * One, two or four lengths (CSS's order: all sides; top and bottom, left and right; top,
 * right, bottom, left), each whole pixels up to `maxPixels` or a percent up to `maxPercent`.
 *
 * @example sideLengths(500, 50, 'invalid_crop_margin', "of the subject's box").read('crop_margin', '10% 30px')
 */
export function sideLengths(maxPixels: number, maxPercent: number, problem: OptionProblem, percentOf: string): ValueKind<SideLengths> {
  const length = `(?:${wholeRange(0, maxPixels)}(?:px)?|${decimalRange(0, maxPercent)}%)`;
  return kind({
    read(name, value) {
      const parts = text(name, value, problem).split(/\s+/);
      const lengths = parts.map(lengthOf);
      const valid = (l: Length | undefined): l is Length => !!l && (l.unit === '%' ? l.value <= maxPercent : Number.isInteger(l.value) && l.value <= maxPixels);
      if (![1, 2, 4].includes(parts.length) || !lengths.every(valid)) {
        throw new OptionValueError(
          problem,
          `${name} must be one, two or four lengths, each whole pixels up to ${maxPixels} ("30px") or a percent ${percentOf} up to ${maxPercent}% ("10%"), not ${shown(value)}.`,
        );
      }
      const [top, right = top, bottom = top, left = right] = lengths as Length[];
      return { top, right, bottom, left };
    },
    schema: Type.Union([Type.Integer({ minimum: 0, maximum: maxPixels }), Type.String({ pattern: `^${length}(?: ${length}(?: ${length} ${length})?)?$` })]),
    takes: `one, two or four lengths (all sides; top and bottom, left and right; top, right, bottom, left), each whole pixels (\`30\`, \`"30px"\`) up to ${maxPixels} or a percent ${percentOf} (\`"10%"\`) up to ${maxPercent} %`,
    problem,
  });
}

/**
 * A region "x1 y1 x2 y2", each in pixels (`px` or no unit) or percent of the photo's side (at
 * most 100 %). Where two corners are in the same unit, the second must lie right of and below
 * the first (else `roi_region_empty`, which no schema can say); one reaching past the photo
 * is cut to it when the photo is read.
 *
 * @example region().read('roi', '0 0 100% 100%')
 */
export function region(): ValueKind<RegionOfInterest> {
  const length = `(?:\\d{1,9}(?:\\.\\d{1,6})?(?:px)?|${decimalRange(0, 100)}%)`;
  return kind({
    read(name, value) {
      const parts = text(name, value, 'invalid_roi').split(/\s+/);
      const lengths = parts.map(lengthOf);
      const [x1, y1, x2, y2] = lengths;
      if (parts.length !== 4 || !x1 || !y1 || !x2 || !y2 || lengths.some((l) => l!.unit === '%' && l!.value > 100)) {
        throw new OptionValueError('invalid_roi', `${name} must be "x1 y1 x2 y2", four lengths in px or % of the photo (at most 100%), such as "0 0 100% 100%", not ${shown(value)}.`);
      }
      const before = (a: Length, b: Length) => a.unit !== b.unit || a.value < b.value;
      if (!before(x1, x2) || !before(y1, y2)) throw new OptionValueError('roi_region_empty', `${name} ${shown(value)} is empty: x1 must be less than x2 and y1 less than y2.`);
      return { x1, y1, x2, y2 };
    },
    schema: Type.String({ pattern: `^${length} ${length} ${length} ${length}$` }),
    takes: '`"x1 y1 x2 y2"` in pixels or percent of the photo (`"10% 5% 90% 100%"`)',
    problem: 'invalid_roi',
  });
}

/**
 * A percent from `min` to `max` as a fraction, or one of the `words` (whose meaning it returns).
 *
 * @example percent(10, 100, { original: undefined }, 'invalid_scale').read('scale', '50%') // 0.5
 */
export function percent<W>(min: number, max: number, words: Readonly<Record<string, W>>, problem: OptionProblem): ValueKind<number | W> {
  const named = Object.keys(words);
  return kind({
    read(name, value) {
      const word = text(name, value, problem).toLowerCase();
      if (Object.hasOwn(words, word)) return words[word];
      const match = PERCENT.exec(word);
      const number = match ? Number(match[1]) : NaN;
      if (number >= min && number <= max) return number / 100;
      throw new OptionValueError(problem, `${name} must be ${named.map((w) => `${w} or `).join('')}a percent from ${min}% to ${max}%, not ${shown(value)}.`);
    },
    schema: Type.String({ pattern: `^(?:${[...named, `${decimalRange(min, max)}%`].join('|')})$` }),
    takes: [...named.map((w) => `\`${w}\``), `\`${min}%\`–\`${max}%\``].join(', '),
    problem,
  });
}

/**
 * Where the subject stands: `original` (undefined: where it was), `center`, one percent for
 * both axes or two (horizontal, vertical), each 0 % to 100 % of the free room.
 *
 * @example place().read('position', '0% 100%') // { x: 0, y: 1 }: bottom left
 */
export function place(): ValueKind<{ x: number; y: number } | undefined> {
  const share = `${decimalRange(0, 100)}%`;
  return kind({
    read(name, value) {
      const word = text(name, value, 'invalid_position').toLowerCase();
      if (word === 'original') return undefined;
      if (word === 'center' || word === 'centre') return { x: 0.5, y: 0.5 };
      const fractions = word.split(/\s+/).map((part) => {
        const match = PERCENT.exec(part);
        return match ? Number(match[1]) / 100 : NaN;
      });
      if ((fractions.length === 1 || fractions.length === 2) && fractions.every((f) => f >= 0 && f <= 1)) {
        const [x, y = x] = fractions;
        return { x, y };
      }
      throw new OptionValueError('invalid_position', `${name} must be original, center, "x%" or "x% y%" (0% to 100%), not ${shown(value)}.`);
    },
    schema: Type.String({ pattern: `^(?:original|center|centre|${share}(?: ${share})?)$` }),
    takes: '`original`, `center`, `"x%"`, `"x% y%"`',
    problem: 'invalid_position',
  });
}

/**
 * A whole percent 0 to 100, with or without `%`, as a fraction.
 *
 * @example share('invalid_shadow').read('shadow_opacity', 20) // 0.2
 */
export function share(problem: OptionProblem): ValueKind<number> {
  return kind({
    read(name, value) {
      const word = text(name, value, problem);
      const number = /^\d{1,3}%?$/.test(word) ? Number(word.replace('%', '')) : NaN;
      if (number >= 0 && number <= 100) return number / 100;
      throw new OptionValueError(problem, `${name} must be a whole number from 0 to 100, not ${shown(value)}.`);
    },
    schema: Type.Union([Type.Integer({ minimum: 0, maximum: 100 }), Type.String({ pattern: `^${wholeRange(0, 100)}%?$` })]),
    takes: '`0`–`100`',
    problem,
  });
}

/**
 * Text matching `pattern` (trimmed), of at most `maxLength` characters: a URL, a model's name.
 * The pattern is the schema's too, so it must be one JSON Schema reads alike (no flags).
 *
 * @example word(/^[a-z]+$/, 64, 'a name', 'invalid_request').read('model', 'isnet')
 */
export function word(pattern: RegExp, maxLength: number, takes: string, problem: OptionProblem): ValueKind<string> {
  return kind({
    read(name, value) {
      const trimmed = typeof value === 'string' ? value.trim() : undefined;
      if (trimmed !== undefined && trimmed.length <= maxLength && pattern.test(trimmed)) return trimmed;
      throw new OptionValueError(problem, `${name} must be ${takes}, not ${shown(value)}.`);
    },
    schema: Type.String({ minLength: 1, maxLength, pattern: pattern.source }),
    takes,
    problem,
  });
}
