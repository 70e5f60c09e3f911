import { describe, expect, it } from 'vitest';
import { CutoutError } from '../../src/errors.js';
import { OptionValueError } from '../../src/options/option-value-error.js';
import { readOptions } from '../../src/options/read-options.js';

// The native wire reads JSON values and form text with the same readers.
const readNative = (fields: Record<string, unknown>) => readOptions(fields, 'native');

// The native wire's reading on its own (the kinds' readers are tested value by value in
// option-values.test.ts), fast enough for mutation testing (the HTTP tests of each option load
// the model). Each refusal is checked by its code and by the field its detail names.

type Fields = Record<string, unknown>;

function refusal(fields: Fields): CutoutError {
  try {
    readNative(fields);
  } catch (error) {
    expect(error).toBeInstanceOf(CutoutError);
    expect((error as CutoutError).code).toBe('invalid_request');
    return error as CutoutError;
  }
  throw new Error(`${JSON.stringify(fields)} was accepted`);
}

const px = (value: number) => ({ value, unit: 'px' });
const pc = (value: number) => ({ value, unit: '%' });

describe('readOptions on the native wire', () => {
  it('gives a request that sends nothing a full-size transparent PNG', () => {
    const options = readNative({});
    expect(options).toEqual({ answer: { channels: 'rgba' } });
  });

  it('takes an empty or blank field, and JSON null, as absent, as remove.bg does', () => {
    for (const empty of ['', '  ', null]) {
      const options = readNative({ format: empty, channels: empty, bg_color: empty, bg_image_url: empty, crop: empty, crop_margin: empty, max_width: empty, roi: empty, refine: empty });
      expect(options, JSON.stringify(empty)).toEqual({ answer: { channels: 'rgba' } });
    }
  });

  it('maps each format name, and only those', () => {
    expect(readNative({ format: 'png' }).format).toBe('png');
    expect(readNative({ format: 'webp' }).format).toBe('webp');
    expect(readNative({ format: 'jpg' }).format).toBe('jpeg');
    expect(readNative({ format: 'jpeg' }).format).toBe('jpeg');
    expect(readNative({ format: ' PNG ' }).format).toBe('png');
    for (const format of ['gif', 'toString', '__proto__', 7, ['png']]) expect(refusal({ format }).message).toMatch(/^format must be/);
  });

  it('takes channels rgba or alpha', () => {
    expect(readNative({ channels: 'alpha' }).answer.channels).toBe('alpha');
    expect(readNative({ channels: 'rgba' }).answer.channels).toBe('rgba');
    expect(refusal({ channels: 'rgb' }).message).toBe('channels must be rgba or alpha, not "rgb".');
    expect(refusal({ channels: 'hasOwnProperty' }).message).toMatch(/^channels must be/);
  });

  it('refuses a background with the mask alone, and two backgrounds at once', () => {
    expect(refusal({ channels: 'alpha', bg_color: 'fff' }).message).toMatch(/^channels=alpha answers the mask alone.*leave out bg_color/);
    expect(refusal({ channels: 'alpha', bg_image_url: 'https://example.com/a.png' }).message).toMatch(/^channels=alpha .*leave out bg_image_url/);
    expect(refusal({ bg_color: 'fff', bg_image_url: 'https://example.com/a.png' }).message).toBe('Send at most one background, not bg_color and bg_image_url.');
    expect(readNative({ channels: 'alpha', crop: true })).toMatchObject({ answer: { channels: 'alpha', crop: { margin: px(0) } } });
  });

  it('reads bg_color as every wire does: hex of 3, 4, 6 or 8 digits, or a CSS colour name', () => {
    expect(readNative({ bg_color: ' #102030 ' }).answer.background).toEqual({ colour: [16, 32, 48, 255] });
    expect(readNative({ bg_color: 'red' }).answer.background).toEqual({ colour: [255, 0, 0, 255] });
    expect(readNative({ bg_color: 'f00c' }).answer.background).toEqual({ colour: [255, 0, 0, 204] });
    expect(refusal({ bg_color: 'ff' }).message).toBe('bg_color must be a hex colour (rgb, rgba, rrggbb or rrggbbaa, # optional) or a CSS colour name, not "ff".');
  });

  it('takes a bg_image_url of 1 to 8192 characters as it is', () => {
    const longest = `https://example.com/${'a'.repeat(8192 - 20)}`;
    expect(readNative({ bg_image_url: longest }).bgImageUrl).toBe(longest);
    expect(readNative({ bg_image_url: 'x' }).bgImageUrl).toBe('x');
    expect(refusal({ bg_image_url: `${longest}a` }).message).toBe(`bg_image_url must be an http(s) URL of at most 8192 characters, not "https://example.com/${'a'.repeat(39)}.`);
    expect(refusal({ bg_image_url: ['https://example.com/a.png'] }).message).toMatch(/^bg_image_url must be/);
  });

  it('reads crop and refine as switches: JSON booleans, true/false, 1/0', () => {
    expect(readNative({ crop: true, refine: false })).toMatchObject({ answer: { crop: { margin: px(0) } }, refine: false });
    expect(readNative({ crop: ' TRUE ', refine: '0' })).toMatchObject({ answer: { crop: { margin: px(0) } }, refine: false });
    expect(readNative({ crop: 1, refine: 'false' })).toMatchObject({ answer: { crop: { margin: px(0) } }, refine: false });
    expect(refusal({ crop: 'yes' }).message).toBe('crop must be true or false (or 1 or 0), not "yes".');
  });

  describe('max_width and max_height', () => {
    it('take whole numbers from 1 to 65535', () => {
      expect(readNative({ max_width: 1, max_height: 65_535 })).toMatchObject({ answer: { maxWidth: 1, maxHeight: 65_535 } });
      expect(readNative({ max_width: ' 640 ', max_height: '65535' })).toMatchObject({ answer: { maxWidth: 640, maxHeight: 65_535 } });
    });

    it('refuse zero, fractions, text in JSON, numbers past the limit and signs', () => {
      expect(readNative({ max_width: '640' }).answer.maxWidth).toBe(640);
      for (const max_width of [0, -1, 1.5, 65_536, '1.5', Number.NaN, true]) {
        expect(refusal({ max_width }).message).toMatch(/^max_width must be a whole number of pixels from 1 to 65535, not /);
      }
      for (const max_height of ['0', '1.5', '65536', '+5', '-5', '5px', 'x5', '5x']) {
        expect(refusal({ max_height }).message).toMatch(/^max_height must be a whole number of pixels from 1 to 65535, not /);
      }
      // A field sent twice, as a form parser may hand it over.
      expect(refusal({ max_width: ['5', '6'] }).message).toBe('max_width must be a whole number of pixels from 1 to 65535, not ["5","6"].');
    });
  });

  it("reads crop_margin by remove.bg's rule: one, two or four lengths, at most 500 px or 50 %", () => {
    const sides = (top: object, right = top, bottom = top, left = right) => ({ top, right, bottom, left });
    expect(readNative({ crop: true, crop_margin: 30 }).answer.crop?.margin).toEqual(sides(px(30)));
    expect(readNative({ crop: true, crop_margin: '12.5%' }).answer.crop?.margin).toEqual(sides(pc(12.5)));
    expect(readNative({ crop: true, crop_margin: '10% 30px' }).answer.crop?.margin).toEqual(sides(pc(10), px(30)));
    expect(readNative({ crop: true, crop_margin: '1 2 3 4' }).answer.crop?.margin).toEqual(sides(px(1), px(2), px(3), px(4)));
    for (const crop_margin of ['501px', '50.5%', '30.5', '1 2 3']) expect(refusal({ crop_margin }).message).toMatch(/^crop_margin must be one, two or four lengths/);
  });

  describe('roi', () => {
    it('takes four lengths in pixels or percent, any whitespace between', () => {
      expect(readNative({ roi: '10% 5% 90% 100%' }).roi).toEqual({ x1: pc(10), y1: pc(5), x2: pc(90), y2: pc(100) });
      expect(readNative({ roi: ' 0  7px\t300 200.5 ' }).roi).toEqual({ x1: px(0), y1: px(7), x2: px(300), y2: px(200.5) });
    });

    it('refuses another count, a bad length, more than 100 % or a non-string', () => {
      for (const roi of ['1 2 3', '1 2 3 4 5', '1 2 3 x', 'x 2 3 4', '1 x 3 4', '1 2 x 4', '101% 0 1 1', '0 101% 1 1', '0 0 101% 1', '0 0 1 101%', [1, 2, 3, 4]]) {
        expect(refusal({ roi }).message).toMatch(/^roi must be (a string|"x1 y1 x2 y2")/);
      }
    });
  });

  it('takes quality fast, best or auto, and nothing else', () => {
    expect(readNative({ quality: 'fast' }).quality).toBe('fast');
    expect(readNative({ quality: 'best' }).quality).toBe('best');
    expect(readNative({ quality: '' })).not.toHaveProperty('quality');
    expect(readNative({ quality: 'BEST' }).quality).toBe('best');
    expect(refusal({ quality: 'good' }).message).toBe('quality must be fast, best or auto, not "good".');
    for (const quality of ['toString', 1]) expect(refusal({ quality }).message).toMatch(/^quality must be fast, best or auto, not /);
    expect(refusal({ quality: true }).message).toBe('quality must be a string, not true.');
  });

  it("reads size as remove.bg's cap in pixels, none for full", () => {
    expect(readNative({ size: 'medium' }).answer.maxPixels).toBe(1_500_000);
    expect(readNative({ size: 'preview' }).answer.maxPixels).toBe(250_000);
    expect(readNative({ size: 'full' }).answer.maxPixels).toBeUndefined();
    expect(readNative({ size: '' }).answer).not.toHaveProperty('maxPixels');
    expect(refusal({ size: 'huge' }).message).toMatch(/^size must be /);
  });

  describe('scale and position', () => {
    it('centre a scaled subject when no position is given, and place it where position says', () => {
      expect(readNative({ scale: '50%' }).answer.placement).toEqual({ scale: 0.5, position: { x: 0.5, y: 0.5 } });
      expect(readNative({ scale: '50%', position: '0% 100%' }).answer.placement).toEqual({ scale: 0.5, position: { x: 0, y: 1 } });
      expect(readNative({ position: '25%' }).answer.placement).toEqual({ scale: undefined, position: { x: 0.25, y: 0.25 } });
    });

    it('leave the subject where it was when both are original or absent', () => {
      for (const fields of [{ scale: 'original' }, { position: 'original' }, { scale: 'original', position: 'original' }, { scale: '', position: '' }]) {
        expect(readNative(fields).answer).not.toHaveProperty('placement');
      }
    });

    it('refuse a scale or a position out of range', () => {
      expect(refusal({ scale: '5%' }).message).toMatch(/^scale must be /);
      expect(refusal({ position: '101%' }).message).toMatch(/^position must be /);
    });
  });

  describe('add_shadow', () => {
    it('adds a drop shadow at half opacity unless shadow_type and shadow_opacity say otherwise', () => {
      expect(readNative({ add_shadow: true }).answer.shadow).toEqual({ kind: 'drop', opacity: 0.5 });
      expect(readNative({ add_shadow: 'true', shadow_type: 'car', shadow_opacity: '20' }).answer.shadow).toEqual({ kind: 'car', opacity: 0.2 });
      expect(readNative({ add_shadow: 'true', shadow_type: '', shadow_opacity: '' }).answer.shadow).toEqual({ kind: 'drop', opacity: 0.5 });
    });

    it('adds none when false or absent, whatever shadow_type and shadow_opacity say', () => {
      expect(readNative({ add_shadow: false, shadow_type: 'car' }).answer).not.toHaveProperty('shadow');
      expect(readNative({ shadow_type: 'car', shadow_opacity: 20 }).answer).not.toHaveProperty('shadow');
      expect(readNative({ add_shadow: '' }).answer).not.toHaveProperty('shadow');
    });

    it('refuses a value that is not a boolean, and a bad shadow_type or shadow_opacity', () => {
      expect(refusal({ add_shadow: 'yes' }).message).toMatch(/^add_shadow must be true or false/);
      expect(refusal({ add_shadow: true, shadow_type: 'long' }).message).toMatch(/^shadow_type must be /);
      expect(refusal({ add_shadow: true, shadow_opacity: 101 }).message).toMatch(/^shadow_opacity must be /);
    });
  });

  it('takes a model name trimmed, lower-case letters, digits and . _ - only', () => {
    expect(readNative({ model: ' isnet_v1.2-int8 ' }).model).toBe('isnet_v1.2-int8');
    expect(readNative({ model: '' })).not.toHaveProperty('model');
    expect(refusal({ model: 'Big Model' }).message).toBe(
      `model must be the name of one of the server's models (lower-case letters, digits, '.', '_', '-'), not "Big Model".`,
    );
    for (const model of [7, ['u2net'], '-first', 'a'.repeat(65)]) expect(refusal({ model }).message).toMatch(/^model must be /);
  });

  it('shows at most 60 characters of a refused value', () => {
    const message = refusal({ channels: 'a'.repeat(100) }).message;
    expect(message).toBe(`channels must be rgba or alpha, not ${JSON.stringify('a'.repeat(100)).slice(0, 60)}.`);
  });
});

describe("the answer's spec, as the option table writes it", () => {
  it('carries the channels and sizes, with no background or crop unless asked; the format stays beside it, for Accept', () => {
    const options = readNative({ max_width: 100, max_height: 50, format: 'webp' });
    expect(options).toEqual({ format: 'webp', answer: { channels: 'rgba', maxWidth: 100, maxHeight: 50 } });
    expect(readNative({ channels: 'alpha' }).answer.channels).toBe('alpha');
    expect(readNative({ size: 'full' }).answer).not.toHaveProperty('maxPixels');
  });

  it('carries the size cap, the placement and the shadow when asked', () => {
    const { answer } = readNative({ size: 'hd', scale: '80%', position: '10% 90%', add_shadow: true, shadow_type: '3D' });
    expect(answer).toMatchObject({ maxPixels: 4_000_000, placement: { scale: 0.8, position: { x: 0.1, y: 0.9 } }, shadow: { kind: '3D', opacity: 0.5 } });
  });

  it('turns bg_color into a colour, bg_image_url into an image, and crop into its margin', () => {
    expect(readNative({ bg_color: '000' }).answer.background).toEqual({ colour: [0, 0, 0, 255] });
    expect(readNative({ bg_image_url: 'https://example.com/a.png' }).answer.background).toEqual({ image: true });
    expect(readNative({ crop: true, crop_margin: '10%' }).answer.crop).toEqual({ margin: { top: pc(10), right: pc(10), bottom: pc(10), left: pc(10) } });
    expect(readNative({ crop: true }).answer.crop).toEqual({ margin: px(0) });
    expect(readNative({ crop: false, crop_margin: '10%' }).answer.crop).toBeUndefined();
  });
});

describe("readOptions on remove.bg's and Photoroom's wires", () => {
  /** The OptionValueError a wire's reading threw. */
  function refusedOn(wire: 'removebg' | 'photoroom', fields: Fields, context = {}) {
    try {
      readOptions(fields, wire, context);
    } catch (error) {
      expect(error).toBeInstanceOf(OptionValueError);
      return error as OptionValueError;
    }
    throw new Error(`${JSON.stringify(fields)} was accepted on ${wire}`);
  }

  it("takes each wire's documented defaults: remove.bg's preview and auto, Photoroom's full and png", () => {
    expect(readOptions({}, 'removebg')).toMatchObject({ format: 'auto', answer: { maxPixels: 250_000 } });
    const photoroom = readOptions({}, 'photoroom');
    expect(photoroom.format).toBe('png');
    expect(photoroom).not.toHaveProperty('maxPixels');
  });

  it("takes only the words of Photoroom's own lists there, in any case, and names them", () => {
    expect(readOptions({ format: ' WEBP ', size: 'HD' }, 'photoroom')).toMatchObject({ format: 'webp', answer: { maxPixels: 4_000_000 } });
    const zip = refusedOn('photoroom', { format: 'zip' });
    expect([zip.problem, zip.message]).toEqual(['invalid_format', 'format must be png, jpg, jpeg, webp here, not "zip".']);
    const small = refusedOn('photoroom', { size: 'small' });
    expect([small.problem, small.message]).toEqual(['invalid_size', 'size must be preview, medium, hd, full here, not "small".']);
    expect(refusedOn('photoroom', { size: 'x'.repeat(100) }).message).toBe(`size must be preview, medium, hd, full here, not ${JSON.stringify('x'.repeat(100)).slice(0, 60)}.`);
  });

  it("counts remove.bg's uploaded background with the others", () => {
    const two = refusedOn('removebg', { bg_color: 'red' }, { backgroundFile: true });
    expect([two.problem, two.message]).toEqual(['multiple_bg_sources', 'Send at most one background, not bg_image_file and bg_color.']);
    const mask = refusedOn('removebg', { channels: 'alpha' }, { backgroundFile: true });
    expect([mask.problem, mask.message]).toEqual(['invalid_channels', 'channels=alpha answers the mask alone, which has no background: leave out bg_image_file, or ask for rgba.']);
    expect(readOptions({}, 'removebg', { backgroundFile: true })).not.toHaveProperty('background');
  });
});
