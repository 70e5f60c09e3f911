import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { REMOVEBG_ERRORS } from '../../src/compat/removebg-errors.js';
import { OptionValueError } from '../../src/options/option-value-error.js';
import { readRemoveBgRequest, readSegmentRequest, REMOVEBG_PARAMETERS } from '../../src/compat/removebg-request.js';
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
} from '../helpers/option-readers.js';

/**
 * Property-based tests of the remove.bg parameter readers: whatever a client sends (any
 * string, any JSON value), each returns a value or throws a OptionValueError, a 400 with one
 * of remove.bg's codes, never an error of another kind; and what they accept means what the
 * docs/clients.md says.
 */

const READERS: Record<string, (value: unknown) => unknown> = {
  size: readSize,
  format: readFormat,
  channels: readChannels,
  roi: readRoi,
  crop_margin: readCropMargin,
  scale: readScale,
  position: readPosition,
  bg_color: (value) => readColour('bg_color', value),
  crop: (value) => readBoolean('crop', value),
  shadow_type: readShadowType,
  shadow_opacity: readShadowOpacity,
};

/** Runs `read` and checks that it returned, or threw a 400 OptionValueError with a registered code. */
function valueOrCode(read: (value: unknown) => unknown, value: unknown): void {
  try {
    read(value);
  } catch (error) {
    if (!(error instanceof OptionValueError)) throw new Error(`threw ${String(error)} for ${JSON.stringify(value)}`, { cause: error });
    expect(error.status).toBe(400);
    expect(Object.keys(REMOVEBG_ERRORS)).toContain(error.problem);
    expect(REMOVEBG_ERRORS[error.problem].status).toBe(400);
    expect(error.message.length).toBeGreaterThan(10);
  }
}

/** Strings near the valid ones: lengths, units, percent signs, words, spaces, in any order. */
const nearValid = fc
  .array(
    fc.oneof(
      fc.constantFrom('%', 'px', ' ', '  ', '\t', '#', '.', '-', '+', 'e', '0', '1', '10', '50', '100', '101', '500', '501', '9999999999', 'center', 'original', 'full', 'preview', 'zip', 'red', 'f00', 'true', 'NaN'),
      fc.nat({ max: 1000 }).map(String),
    ),
    { maxLength: 8 },
  )
  .map((parts) => parts.join(''));
const anyString = fc.oneof(fc.string(), fc.string({ unit: 'grapheme' }), nearValid);
const anyValue = fc.oneof(anyString, fc.anything());

describe('every reader', () => {
  for (const [name, read] of Object.entries(READERS)) {
    it(`${name}: any string or JSON value gives a value or a 400 with a code`, () => {
      fc.assert(fc.property(anyValue, (value) => valueOrCode(read, value)), { numRuns: 400 });
    });
  }
});

describe('what the readers accept', () => {
  const px = fc.integer({ min: 0, max: 500 });
  const percent = fc.integer({ min: 0, max: 50 });
  const margin = fc.oneof(px.map((v) => ({ text: fc.sample(fc.constantFrom(`${v}`, `${v}px`), 1)[0], length: { value: v, unit: 'px' } })), percent.map((v) => ({ text: `${v}%`, length: { value: v, unit: '%' } })));

  it('crop_margin: one, two or four lengths are top, right, bottom, left as CSS orders them', () => {
    fc.assert(
      fc.property(fc.oneof(fc.array(margin, { minLength: 1, maxLength: 1 }), fc.array(margin, { minLength: 2, maxLength: 2 }), fc.array(margin, { minLength: 4, maxLength: 4 })), (parts) => {
        const sides = readCropMargin(parts.map((p) => p.text).join(' '));
        const [a, b = a, c = a, d = b] = parts.map((p) => p.length);
        expect(sides).toEqual({ top: a, right: b, bottom: c, left: d });
      }),
    );
  });

  it('crop_margin: past 500 px or 50 % a side is invalid_crop_margin', () => {
    fc.assert(
      fc.property(fc.oneof(fc.integer({ min: 501, max: 1e6 }).map((v) => `${v}px`), fc.integer({ min: 51, max: 1000 }).map((v) => `${v}%`)), (text) => {
        expect(() => readCropMargin(text)).toThrow(expect.objectContaining({ problem: 'invalid_crop_margin' }));
      }),
    );
  });

  it('colours: any hex of 3, 4, 6 or 8 digits reads back as its channels', () => {
    fc.assert(
      fc.property(fc.tuple(fc.nat(255), fc.nat(255), fc.nat(255), fc.nat(255)), fc.boolean(), fc.boolean(), ([r, g, b, a], hash, withAlpha) => {
        const hex = [r, g, b, ...(withAlpha ? [a] : [])].map((v) => v.toString(16).padStart(2, '0')).join('');
        expect(readColour('bg_color', `${hash ? '#' : ''}${hex}`)).toEqual([r, g, b, withAlpha ? a : 255]);
      }),
    );
    expect(readColour('bg_color', 'f00c')).toEqual([255, 0, 0, 204]);
    expect(readColour('bg_color', 'RebeccaPurple')).toEqual([102, 51, 153, 255]);
  });

  it('scale: 10 % to 100 % as a fraction, original as none, anything else invalid_scale', () => {
    fc.assert(
      fc.property(fc.integer({ min: 10, max: 100 }), (p) => {
        expect(readScale(`${p}%`)).toBeCloseTo(p / 100);
      }),
    );
    expect(readScale('original')).toBeUndefined();
    for (const bad of ['9%', '101%', '50', '0.5']) expect(() => readScale(bad)).toThrow(expect.objectContaining({ problem: 'invalid_scale' }));
  });

  it('position: one percent for both axes, two for each', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 100 }), fc.integer({ min: 0, max: 100 }), (x, y) => {
        expect(readPosition(`${x}% ${y}%`)).toEqual({ x: x / 100, y: y / 100 });
        expect(readPosition(`${x}%`)).toEqual({ x: x / 100, y: x / 100 });
      }),
    );
    expect(readPosition('center')).toEqual({ x: 0.5, y: 0.5 });
  });

  it('roi: unit-less numbers are pixels; percent at most 100', () => {
    expect(readRoi('0 0 100% 100%')).toEqual({ x1: { value: 0, unit: 'px' }, y1: { value: 0, unit: 'px' }, x2: { value: 100, unit: '%' }, y2: { value: 100, unit: '%' } });
    expect(() => readRoi('0 0 101% 100%')).toThrow(expect.objectContaining({ problem: 'invalid_roi' }));
    expect(() => readRoi('10px 0 5px 100%')).toThrow(expect.objectContaining({ problem: 'roi_region_empty' }));
  });

  it('booleans: JSON booleans, true/false in any case, 1/0', () => {
    for (const yes of [true, 'true', 'TRUE', ' True ', 1, '1']) expect(readBoolean('crop', yes)).toBe(true);
    for (const no of [false, 'false', 'False', 0, '0']) expect(readBoolean('crop', no)).toBe(false);
  });

  it('size: the caps of each name', () => {
    expect([readSize('preview'), readSize('Regular'), readSize('medium'), readSize('hd'), readSize('full'), readSize('50MP'), readSize('auto')]).toEqual([250_000, 250_000, 1_500_000, 4_000_000, undefined, undefined, undefined]);
  });
});

describe('a whole request', () => {
  it("takes remove.bg's documented defaults: size preview (at most 0.25 MP) and format auto, an empty size being none", () => {
    const image_url = 'https://example.com/photo.jpg';
    for (const fields of [{ image_url }, { image_url, size: '' }]) {
      const { removal } = readRemoveBgRequest({ fields, files: {} });
      expect(removal.options.answer.maxPixels, JSON.stringify(fields)).toBe(250_000);
      expect(removal.options.format).toBe('auto');
    }
    expect(readRemoveBgRequest({ fields: { image_url, size: 'full' }, files: {} }).removal.options.answer.maxPixels).toBeUndefined();
  });

  const field = fc.oneof(anyString, fc.constant(''), fc.boolean(), fc.integer(), fc.constant(null));
  const names = [...REMOVEBG_PARAMETERS, 'image_url', 'image_file_b64', 'despill', 'unknown'];

  it('any set of fields gives a request or a 400 with a code', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.constantFrom(...names), field), fc.boolean(), (fields, withFile) => {
        const files: Record<string, Uint8Array> = withFile ? { image_file: new Uint8Array([1, 2, 3]) } : {};
        valueOrCode(() => readRemoveBgRequest({ fields, files }), undefined);
        valueOrCode(() => readSegmentRequest({ fields, files }), undefined);
      }),
      { numRuns: 1000 },
    );
  });
});
