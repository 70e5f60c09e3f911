import { describe, expect, it } from 'vitest';
import type { OptionProblem } from '../../src/options/option-value-error.js';
import { OptionValueError } from '../../src/options/option-value-error.js';
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

// The option readers shared by both APIs, one example at a time (the fast-check properties in
// removebg-values.test.ts draw other inputs each run, so mutation testing leaves them out):
// what each accepts, its limits on both sides, and the remove.bg code and detail of a refusal.

/** The error a reader threw for a value: a 400 OptionValueError; fails the test if it accepted it. */
function refusal(read: () => unknown): OptionValueError {
  let value: unknown;
  try {
    value = read();
  } catch (error) {
    expect(error).toBeInstanceOf(OptionValueError);
    expect((error as OptionValueError).status).toBe(400);
    expect((error as OptionValueError).code).toBe('invalid_request');
    return error as OptionValueError;
  }
  throw new Error(`accepted, giving ${JSON.stringify(value)}`);
}

/** Checks that each value is refused with `problem`. */
function refusesAll(read: (value: unknown) => unknown, problem: OptionProblem, values: unknown[]): void {
  for (const value of values) expect(refusal(() => read(value)).problem, JSON.stringify(value) ?? String(value)).toBe(problem);
}

const px = (value: number) => ({ value, unit: 'px' });
const pc = (value: number) => ({ value, unit: '%' });

describe('any reader of text', () => {
  it('trims a string and reads a finite JSON number as its digits', () => {
    expect(readSize('  hd \t')).toBe(4_000_000);
    expect(readShadowOpacity(40)).toBe(0.4);
    expect(readScale(' 50% ')).toBe(0.5);
  });

  it('refuses anything else with the parameter’s code, showing what was sent', () => {
    for (const value of [{}, [], null, undefined, true, Number.NaN, Number.POSITIVE_INFINITY]) {
      const error = refusal(() => readSize(value));
      expect(error.problem).toBe('invalid_size');
      expect(error.message).toBe(`size must be a string, not ${JSON.stringify(value) ?? String(value)}.`);
    }
    expect(refusal(() => readColour('shadow_color', { r: 1 })).message).toBe('shadow_color must be a string, not {"r":1}.');
    expect(refusal(() => readSize(undefined)).message).toBe('size must be a string, not undefined.');
  });

  it('names the parameter when it refuses a value that is not text', () => {
    const readers: [string, (value: unknown) => unknown][] = [
      ['format', readFormat],
      ['channels', readChannels],
      ['roi', readRoi],
      ['crop_margin', readCropMargin],
      ['scale', readScale],
      ['position', readPosition],
      ['shadow_type', readShadowType],
      ['shadow_opacity', readShadowOpacity],
    ];
    for (const [name, read] of readers) expect(refusal(() => read([1])).message).toBe(`${name} must be a string, not [1].`);
  });

  it('shows at most 60 characters of a refused value', () => {
    const long = 'x'.repeat(100);
    expect(refusal(() => readSize(long)).message).toBe(`size must be preview, small, regular, medium, hd, full, 4k, auto or 50MP, not "${'x'.repeat(59)}.`);
  });
});

describe('readBoolean', () => {
  it('takes JSON booleans, true/false in any case with spaces, and 1/0 as numbers or strings', () => {
    for (const yes of [true, 'true', 'TRUE', ' True ', 1, '1', ' 1 ']) expect(readBoolean('crop', yes), String(yes)).toBe(true);
    for (const no of [false, 'false', 'FALSE', ' False\t', 0, '0', ' 0 ']) expect(readBoolean('crop', no), String(no)).toBe(false);
  });

  it('refuses anything else as invalid_request, naming the field', () => {
    refusesAll((value) => readBoolean('crop', value), 'invalid_request', ['', 'yes', 'no', 'on', 2, '2', -1, 0.5, 'truee', null, undefined, {}, ['true'], [1]]);
    expect(refusal(() => readBoolean('semitransparency', 'yes')).message).toBe('semitransparency must be true or false (or 1 or 0), not "yes".');
  });
});

describe('readSize', () => {
  it('gives each name its cap in pixels, in any case', () => {
    const caps = ['preview', 'small', 'regular', 'medium', 'hd', 'full', '4k', 'auto', '50mp'].map(readSize);
    expect(caps).toEqual([250_000, 250_000, 250_000, 1_500_000, 4_000_000, undefined, undefined, undefined, undefined]);
    expect([readSize('PREVIEW'), readSize('Small'), readSize('REGULAR'), readSize('Medium'), readSize('HD'), readSize('4K'), readSize('50MP')]).toEqual([
      250_000, 250_000, 250_000, 1_500_000, 4_000_000, undefined, undefined,
    ]);
  });

  it('refuses other words, numbers and the names every object has, as invalid_size', () => {
    refusesAll(readSize, 'invalid_size', ['', 'large', 'hd ready', '4', 4, '50', 'toString', 'constructor', '__proto__', 'hasOwnProperty']);
    expect(refusal(() => readSize('large')).message).toBe('size must be preview, small, regular, medium, hd, full, 4k, auto or 50MP, not "large".');
  });
});

describe('readFormat', () => {
  it('reads auto, png, jpg or jpeg (both jpeg), webp and zip, in any case', () => {
    expect(['auto', 'png', 'jpg', 'jpeg', 'webp', 'zip'].map(readFormat)).toEqual(['auto', 'png', 'jpeg', 'jpeg', 'webp', 'zip']);
    expect(['AUTO', 'PNG', 'JPG', 'Jpeg', 'WebP', 'ZIP'].map(readFormat)).toEqual(['auto', 'png', 'jpeg', 'jpeg', 'webp', 'zip']);
  });

  it('refuses other formats and inherited names as invalid_format', () => {
    refusesAll(readFormat, 'invalid_format', ['', 'gif', 'tiff', 'image/png', 'toString', 'constructor', 1, {}]);
    expect(refusal(() => readFormat('gif')).message).toBe('format must be auto, png, jpg, jpeg, webp or zip, not "gif".');
  });
});

describe('readChannels', () => {
  it('reads rgba and alpha in any case', () => {
    expect([readChannels('rgba'), readChannels('RGBA'), readChannels('alpha'), readChannels(' Alpha ')]).toEqual(['rgba', 'rgba', 'alpha', 'alpha']);
  });

  it('refuses anything else as invalid_channels', () => {
    refusesAll(readChannels, 'invalid_channels', ['', 'rgb', 'a', 'rgba alpha', 4, []]);
    expect(refusal(() => readChannels('rgb')).message).toBe('channels must be rgba or alpha, not "rgb".');
  });
});

describe('readRoi', () => {
  it('reads four lengths in px, % or no unit (pixels), any whitespace between', () => {
    expect(readRoi('0 0 100% 100%')).toEqual({ x1: px(0), y1: px(0), x2: pc(100), y2: pc(100) });
    expect(readRoi('10px 20PX 30Px 40')).toEqual({ x1: px(10), y1: px(20), x2: px(30), y2: px(40) });
    expect(readRoi('  1.5%\t2.25%  \n 99.5% 100% ')).toEqual({ x1: pc(1.5), y1: pc(2.25), x2: pc(99.5), y2: pc(100) });
    expect(readRoi('0px 0% 0% 0px')).toEqual({ x1: px(0), y1: pc(0), x2: pc(0), y2: px(0) });
  });

  it('takes up to 9 digits and 6 decimals, and any pixel count past 100', () => {
    expect(readRoi('0 0 999999999 123456789.123456')).toEqual({ x1: px(0), y1: px(0), x2: px(999_999_999), y2: px(123_456_789.123456) });
    expect(readRoi('0 0 500 1000px')).toEqual({ x1: px(0), y1: px(0), x2: px(500), y2: px(1000) });
  });

  it('refuses anything but four lengths as invalid_roi', () => {
    refusesAll(readRoi, 'invalid_roi', [
      '',
      '0 0 10',
      '0 0 10 10 10',
      'x 0 10 10',
      '0 x 10 10',
      '0 0 x 10',
      '0 0 10 x',
      '-1 0 10 10',
      '0 0 1e3 10',
      '0 0 .5 10',
      '0 0 5. 10',
      '0 0 10pt 10',
      '0 0 10%% 10',
      '0 0 1234567890 10',
      '0 0 1.1234567 10',
      '0,0,10,10',
      0,
      { x1: 0 },
    ]);
    expect(refusal(() => readRoi('0 0 10')).message).toBe('roi must be "x1 y1 x2 y2", four lengths in px or % of the photo (at most 100%), such as "0 0 100% 100%", not "0 0 10".');
  });

  it('takes a percent up to 100 in any corner, and no further', () => {
    expect(readRoi('100% 100% 100px 100px')).toEqual({ x1: pc(100), y1: pc(100), x2: px(100), y2: px(100) });
    refusesAll(readRoi, 'invalid_roi', ['101% 0 200 200', '0 100.5% 200 200', '0 0 100.000001% 10', '0 0 10 101%']);
  });

  it('refuses a region whose second corner is not right of and below the first, in one unit, as roi_region_empty', () => {
    refusesAll(readRoi, 'roi_region_empty', ['10 0 10 5', '11 0 10 5', '0 10 5 10', '0 11 5 10', '10% 0 10% 5', '0 10% 5 10%', '50% 50% 10% 10%']);
    expect(refusal(() => readRoi('10 0 10 5')).message).toBe('roi "10 0 10 5" is empty: x1 must be less than x2 and y1 less than y2.');
  });

  it('compares only corners in the same unit', () => {
    expect(readRoi('50% 50% 10px 10px')).toEqual({ x1: pc(50), y1: pc(50), x2: px(10), y2: px(10) });
    expect(readRoi('50px 10 10% 20')).toEqual({ x1: px(50), y1: px(10), x2: pc(10), y2: px(20) });
    expect(readRoi('9 9.5 9.5 10')).toEqual({ x1: px(9), y1: px(9.5), x2: px(9.5), y2: px(10) });
  });
});

describe('readCropMargin', () => {
  it('gives one length to every side', () => {
    expect(readCropMargin('30px')).toEqual({ top: px(30), right: px(30), bottom: px(30), left: px(30) });
    expect(readCropMargin('0')).toEqual({ top: px(0), right: px(0), bottom: px(0), left: px(0) });
    expect(readCropMargin(12)).toEqual({ top: px(12), right: px(12), bottom: px(12), left: px(12) });
  });

  it('gives two lengths to top and bottom, then right and left', () => {
    expect(readCropMargin('10% 30PX')).toEqual({ top: pc(10), right: px(30), bottom: pc(10), left: px(30) });
  });

  it('gives four lengths to top, right, bottom, left, any whitespace between', () => {
    expect(readCropMargin(' 1px\t2%  3 \n4.5% ')).toEqual({ top: px(1), right: pc(2), bottom: px(3), left: pc(4.5) });
  });

  it('takes whole pixels up to 500 and percent up to 50, fractions of a percent too', () => {
    expect(readCropMargin('500px 50%')).toEqual({ top: px(500), right: pc(50), bottom: px(500), left: pc(50) });
    expect(readCropMargin('0% 400 12.5% 49.999999%')).toEqual({ top: pc(0), right: px(400), bottom: pc(12.5), left: pc(49.999999) });
  });

  it('refuses more, fractional pixels, three or five lengths, and other text as invalid_crop_margin', () => {
    refusesAll(readCropMargin, 'invalid_crop_margin', [
      '501px',
      '501',
      '50.5%',
      '51%',
      '400%',
      '10.5px',
      '0.5',
      '1 2 3',
      '1 2 3 4 5',
      '',
      '-1px',
      '10pt',
      '1,2',
      '10px x',
      'x 10px',
      '1 2 3 x',
      [],
      null,
    ]);
    expect(refusal(() => readCropMargin('501px')).message).toBe(
      'crop_margin must be one, two or four lengths, each whole pixels up to 500 ("30px") or a percent of the subject up to 50% ("10%"), not "501px".',
    );
  });
});

describe('readScale', () => {
  it('reads original (any case) as none', () => {
    for (const original of ['original', 'ORIGINAL', ' Original ']) expect(readScale(original)).toBeUndefined();
  });

  it('reads 10 % to 100 % as a fraction, with up to 6 decimals', () => {
    expect([readScale('10%'), readScale('100%'), readScale('10.5%'), readScale('99.999999%'), readScale('050%')]).toEqual([0.1, 1, 0.105, 99.999999 / 100, 0.5]);
  });

  it('refuses anything outside 10 % to 100 %, or not a percent, as invalid_scale', () => {
    refusesAll(readScale, 'invalid_scale', ['9.999999%', '9%', '0%', '100.000001%', '101%', '1000%', '50', 50, '0.5', '50 %', '+50%', '-50%', '50%%', '.5%', '50.1234567%', '', 'none', 'origin', {}]);
    expect(refusal(() => readScale('5%')).message).toBe('scale must be original or a percent from 10% to 100%, not "5%".');
  });
});

describe('readPosition', () => {
  it('reads original (any case) as none, and center or centre as the middle', () => {
    expect(readPosition('ORIGINAL')).toBeUndefined();
    expect(readPosition(' original')).toBeUndefined();
    for (const middle of ['center', 'CENTER', 'centre', ' Centre ']) expect(readPosition(middle)).toEqual({ x: 0.5, y: 0.5 });
  });

  it('reads one percent for both axes, or two for each, 0 % to 100 %', () => {
    expect(readPosition('0%')).toEqual({ x: 0, y: 0 });
    expect(readPosition('100%')).toEqual({ x: 1, y: 1 });
    expect(readPosition('0% 100%')).toEqual({ x: 0, y: 1 });
    expect(readPosition('100%\t 25.5%')).toEqual({ x: 1, y: 0.255 });
  });

  it('refuses more than two, beyond 100 %, no percent sign or other words as invalid_position', () => {
    refusesAll(readPosition, 'invalid_position', ['', '101%', '100.1% 0%', '0% 101%', '50', 50, '50% 50', 'x 50%', '10% 20% 30%', 'left', 'top left', 'centered', '-1%', '50%,50%', null]);
    expect(refusal(() => readPosition('left')).message).toBe('position must be original, center, "x%" or "x% y%" (0% to 100%), not "left".');
  });
});

describe('readColour', () => {
  it('reads hex of 3, 4, 6 or 8 digits, # optional, any case; the 4th or 8th digits are the alpha', () => {
    expect(readColour('bg_color', 'f00')).toEqual([255, 0, 0, 255]);
    expect(readColour('bg_color', '#0Af')).toEqual([0, 170, 255, 255]);
    expect(readColour('bg_color', 'f00c')).toEqual([255, 0, 0, 204]);
    expect(readColour('bg_color', '#1234')).toEqual([17, 34, 51, 68]);
    expect(readColour('bg_color', '1a2b3c')).toEqual([26, 43, 60, 255]);
    expect(readColour('bg_color', '#A1B2C3')).toEqual([161, 178, 195, 255]);
    expect(readColour('bg_color', '1a2b3c4d')).toEqual([26, 43, 60, 77]);
    expect(readColour('bg_color', ' #FFFFFF00 ')).toEqual([255, 255, 255, 0]);
  });

  it('reads CSS colour names, in any case', () => {
    expect(readColour('bg_color', 'red')).toEqual([255, 0, 0, 255]);
    expect(readColour('bg_color', 'RebeccaPurple')).toEqual([102, 51, 153, 255]);
    expect(readColour('bg_color', ' white ')).toEqual([255, 255, 255, 255]);
  });

  it('refuses other digit counts, non-hex digits, unknown names and inherited names as invalid_bg_color, naming the field', () => {
    refusesAll((value) => readColour('bg_color', value), 'invalid_bg_color', [
      '',
      '#',
      'f',
      'ff',
      'f00cc',
      '#1234567',
      '123456789',
      'ggg',
      '#red',
      '##f00',
      'reddish',
      'toString',
      'constructor',
      '__proto__',
      'f00 0',
      null,
    ]);
    expect(refusal(() => readColour('shadow_color', 'ggg')).message).toBe('shadow_color must be a hex colour (rgb, rgba, rrggbb or rrggbbaa, # optional) or a CSS colour name, not "ggg".');
  });

  it('reads a number as its digits', () => {
    expect(readColour('bg_color', 123)).toEqual([17, 34, 51, 255]);
    expect(readColour('bg_color', 123456)).toEqual([18, 52, 86, 255]);
  });
});

describe('readShadowType', () => {
  it('reads drop, car and 3D, in any case', () => {
    expect(['drop', 'DROP', 'car', ' Car ', '3D', '3d'].map(readShadowType)).toEqual(['drop', 'drop', 'car', 'car', '3D', '3D']);
  });

  it('refuses other types as invalid_shadow', () => {
    refusesAll(readShadowType, 'invalid_shadow', ['', 'shadow', '3', 3, 'd', 'drop car', {}]);
    expect(refusal(() => readShadowType('soft')).message).toBe('shadow_type must be drop, car or 3D, not "soft".');
  });
});

describe('readShadowOpacity', () => {
  it('reads a whole percent from 0 to 100, % optional, as a fraction', () => {
    expect([readShadowOpacity('0'), readShadowOpacity('100'), readShadowOpacity('50%'), readShadowOpacity(' 7 '), readShadowOpacity('100%'), readShadowOpacity(0), readShadowOpacity('007')]).toEqual([0, 1, 0.5, 0.07, 1, 0, 0.07]);
  });

  it('refuses past 100, fractions, signs, an empty value and other text as invalid_shadow', () => {
    refusesAll(readShadowOpacity, 'invalid_shadow', ['', '%', '101', '101%', '1000', 101, '50.5', 50.5, '-1', '+1', '50%%', '%50', '5 0', 'half', null]);
    expect(refusal(() => readShadowOpacity('101')).message).toBe('shadow_opacity must be a whole number from 0 to 100, not "101".');
  });
});
