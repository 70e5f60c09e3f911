import { describe, expect, it } from 'vitest';
import { CutoutError } from '../../src/errors.js';
import { answerSpec, parseOutputOptions } from '../../src/removal/output-options.js';

// The parser on its own, fast enough for mutation testing (the HTTP tests of each option load
// the model). Each refusal is checked by its code and by the field its detail names.

type Fields = Record<string, unknown>;

function refusal(fields: Fields, source: 'json' | 'form'): CutoutError {
  try {
    parseOutputOptions(fields, source);
  } catch (error) {
    expect(error).toBeInstanceOf(CutoutError);
    expect((error as CutoutError).code).toBe('invalid_request');
    return error as CutoutError;
  }
  throw new Error(`${JSON.stringify(fields)} (${source}) was accepted`);
}

const px = (value: number) => ({ value, unit: 'px' });
const pc = (value: number) => ({ value, unit: '%' });

describe('parseOutputOptions', () => {
  it('gives a request that sends nothing a full-size transparent PNG', () => {
    for (const source of ['json', 'form'] as const) {
      const options = parseOutputOptions({}, source);
      expect(options).toMatchObject({ channels: 'rgba', crop: false, cropMargin: px(0) });
      for (const absent of ['format', 'bgColor', 'bgImageUrl', 'maxWidth', 'maxHeight', 'roi', 'refine', 'quality', 'maxPixels', 'placement', 'shadow', 'model']) expect(options).not.toHaveProperty(absent);
    }
  });

  it('takes an empty form field as absent, but not an empty JSON string', () => {
    const form = parseOutputOptions({ format: '', channels: '', bg_color: '', crop: '', crop_margin: '', max_width: '', roi: '', refine: '' }, 'form');
    expect(form).toMatchObject({ channels: 'rgba', crop: false, cropMargin: px(0) });
    expect(form.format).toBeUndefined();
    expect(form.refine).toBeUndefined();
    expect(refusal({ format: '' }, 'json').message).toMatch(/^format must be png, webp, jpg or jpeg\b.*, not ""\.$/);
    expect(refusal({ bg_image_url: '' }, 'json').message).toContain('bg_image_url');
  });

  it('maps each format name, and only those', () => {
    expect(parseOutputOptions({ format: 'png' }, 'json').format).toBe('png');
    expect(parseOutputOptions({ format: 'webp' }, 'form').format).toBe('webp');
    expect(parseOutputOptions({ format: 'jpg' }, 'json').format).toBe('jpeg');
    expect(parseOutputOptions({ format: 'jpeg' }, 'json').format).toBe('jpeg');
    for (const format of ['PNG', 'gif', 'toString', '__proto__', 7, ['png']]) expect(refusal({ format }, 'json').message).toMatch(/^format must be/);
  });

  it('takes channels rgba or alpha', () => {
    expect(parseOutputOptions({ channels: 'alpha' }, 'json').channels).toBe('alpha');
    expect(parseOutputOptions({ channels: 'rgba' }, 'form').channels).toBe('rgba');
    expect(refusal({ channels: 'rgb' }, 'json').message).toBe('channels must be rgba or alpha, not "rgb".');
    expect(refusal({ channels: 'hasOwnProperty' }, 'form').message).toMatch(/^channels must be/);
  });

  it('refuses a background with the mask alone, and two backgrounds at once', () => {
    expect(refusal({ channels: 'alpha', bg_color: 'fff' }, 'json').message).toMatch(/^channels: alpha/);
    expect(refusal({ channels: 'alpha', bg_image_url: 'https://example.com/a.png' }, 'json').message).toMatch(/^channels: alpha/);
    expect(refusal({ bg_color: 'fff', bg_image_url: 'https://example.com/a.png' }, 'json').message).toBe('Send bg_color or bg_image_url, not both.');
    expect(parseOutputOptions({ channels: 'alpha', crop: true }, 'json')).toMatchObject({ channels: 'alpha', crop: true });
  });

  describe('bg_color', () => {
    it('reads rgb, rrggbb and rrggbbaa, with or without #, in either case, trimmed', () => {
      expect(parseOutputOptions({ bg_color: 'fff' }, 'json').bgColor).toEqual([255, 255, 255, 255]);
      expect(parseOutputOptions({ bg_color: '#1a2' }, 'json').bgColor).toEqual([0x11, 0xaa, 0x22, 255]);
      expect(parseOutputOptions({ bg_color: '#102030' }, 'form').bgColor).toEqual([16, 32, 48, 255]);
      expect(parseOutputOptions({ bg_color: ' 10203040 ' }, 'form').bgColor).toEqual([16, 32, 48, 64]);
      expect(parseOutputOptions({ bg_color: 'ABCDEF' }, 'json').bgColor).toEqual([0xab, 0xcd, 0xef, 255]);
    });

    it('refuses anything else, naming the value', () => {
      for (const bg_color of ['ff', '#12345', '1234567', 'ggg', 'x#fff', '#fff0', 'fff ff', 255]) {
        expect(refusal({ bg_color }, 'json').message).toBe(`bg_color must be a hex colour, rgb, rrggbb or rrggbbaa, with or without #, not ${JSON.stringify(bg_color)}.`);
      }
    });
  });

  it('takes a bg_image_url of 1 to 8192 characters as it is', () => {
    const longest = `https://example.com/${'a'.repeat(8192 - 20)}`;
    expect(parseOutputOptions({ bg_image_url: longest }, 'json').bgImageUrl).toBe(longest);
    expect(parseOutputOptions({ bg_image_url: 'x' }, 'form').bgImageUrl).toBe('x');
    expect(refusal({ bg_image_url: `${longest}a` }, 'json').message).toBe(`bg_image_url must be an http(s) URL of at most 8192 characters, not "https://example.com/${'a'.repeat(39)}.`);
    expect(refusal({ bg_image_url: ['https://example.com/a.png'] }, 'json').message).toMatch(/^bg_image_url must be/);
  });

  describe('crop and refine', () => {
    it('take JSON booleans from JSON', () => {
      expect(parseOutputOptions({ crop: true, refine: false }, 'json')).toMatchObject({ crop: true, refine: false });
      expect(parseOutputOptions({ crop: false, refine: true }, 'json')).toMatchObject({ crop: false, refine: true });
      expect(refusal({ crop: 'true' }, 'json').message).toBe('crop must be true or false (a JSON boolean), not "true".');
      expect(refusal({ refine: 1 }, 'json').message).toBe('refine must be true or false (a JSON boolean), not 1.');
    });

    it('take the words true and false from a form, in any case, trimmed', () => {
      expect(parseOutputOptions({ crop: 'TRUE', refine: ' False ' }, 'form')).toMatchObject({ crop: true, refine: false });
      expect(parseOutputOptions({ crop: 'false', refine: 'true' }, 'form')).toMatchObject({ crop: false, refine: true });
      expect(parseOutputOptions({ crop: ' True ' }, 'form').crop).toBe(true);
      expect(refusal({ crop: true }, 'form').message).toBe('crop must be true or false, not true.');
      for (const crop of ['yes', '1', 'true false', 'truex', 'xfalse']) expect(refusal({ crop }, 'form').message).toBe(`crop must be true or false, not ${JSON.stringify(crop)}.`);
    });
  });

  describe('max_width and max_height', () => {
    it('take whole numbers from 1 to 65535', () => {
      expect(parseOutputOptions({ max_width: 1, max_height: 65_535 }, 'json')).toMatchObject({ maxWidth: 1, maxHeight: 65_535 });
      expect(parseOutputOptions({ max_width: ' 640 ', max_height: '65535' }, 'form')).toMatchObject({ maxWidth: 640, maxHeight: 65_535 });
    });

    it('refuse zero, fractions, text in JSON, numbers past the limit and signs', () => {
      for (const max_width of [0, -1, 1.5, 65_536, '640', Number.NaN]) {
        expect(refusal({ max_width }, 'json').message).toMatch(/^max_width must be a whole number of pixels from 1 to 65535, not /);
      }
      for (const max_height of ['0', '1.5', '65536', '+5', '-5', '5px', 'x5', '5x']) {
        expect(refusal({ max_height }, 'form').message).toMatch(/^max_height must be a whole number of pixels from 1 to 65535, not /);
      }
      // A field sent twice, as a form parser may hand it over.
      expect(refusal({ max_width: ['5', '6'] }, 'form').message).toBe('max_width must be a whole number of pixels from 1 to 65535, not ["5","6"].');
    });
  });

  describe('crop_margin', () => {
    it('takes pixels (a JSON number, a bare number or px) and percent of the box', () => {
      expect(parseOutputOptions({ crop_margin: 30 }, 'json').cropMargin).toEqual(px(30));
      expect(parseOutputOptions({ crop_margin: 0 }, 'json').cropMargin).toEqual(px(0));
      expect(parseOutputOptions({ crop_margin: '30px' }, 'json').cropMargin).toEqual(px(30));
      expect(parseOutputOptions({ crop_margin: ' 30 ' }, 'form').cropMargin).toEqual(px(30));
      expect(parseOutputOptions({ crop_margin: '65535px' }, 'form').cropMargin).toEqual(px(65_535));
      expect(parseOutputOptions({ crop_margin: '12.5%' }, 'json').cropMargin).toEqual(pc(12.5));
      expect(parseOutputOptions({ crop_margin: '12.25%' }, 'json').cropMargin).toEqual(pc(12.25));
      expect(parseOutputOptions({ crop_margin: ' 30px ' }, 'json').cropMargin).toEqual(px(30));
      expect(parseOutputOptions({ crop_margin: '100%' }, 'form').cropMargin).toEqual(pc(100));
    });

    it('refuses fractions of a pixel, more than 100 %, more than 65535 px, signs and a number in a form', () => {
      for (const crop_margin of ['30.5', 30.5, '100.5%', '101%', 65_536, '65536px', '-1', '+1', '1em', '30 px', 'px30', '30pxx', '%', true]) {
        expect(refusal({ crop_margin }, 'json').message).toMatch(/^crop_margin must be whole pixels/);
      }
      expect(refusal({ crop_margin: 30 }, 'form').message).toBe(`crop_margin must be whole pixels (30 or "30px") or a percent of the subject's box ("10%", at most 100%), not 30.`);
    });
  });

  describe('roi', () => {
    it('takes four lengths in pixels or percent, any whitespace between', () => {
      expect(parseOutputOptions({ roi: '10% 5% 90% 100%' }, 'json').roi).toEqual({ x1: pc(10), y1: pc(5), x2: pc(90), y2: pc(100) });
      expect(parseOutputOptions({ roi: ' 0  7px\t300 200.5 ' }, 'form').roi).toEqual({ x1: px(0), y1: px(7), x2: px(300), y2: px(200.5) });
    });

    it('refuses another count, a bad length, more than 100 % or a non-string', () => {
      for (const roi of ['1 2 3', '1 2 3 4 5', '1 2 3 x', 'x 2 3 4', '1 x 3 4', '1 2 x 4', '101% 0 1 1', '0 101% 1 1', '0 0 101% 1', '0 0 1 101%', '', [1, 2, 3, 4]]) {
        expect(refusal({ roi }, 'json').message).toMatch(/^roi must be "x1 y1 x2 y2"/);
      }
    });
  });

  it('takes quality fast or best, and nothing else', () => {
    expect(parseOutputOptions({ quality: 'fast' }, 'json').quality).toBe('fast');
    expect(parseOutputOptions({ quality: 'best' }, 'form').quality).toBe('best');
    expect(parseOutputOptions({ quality: '' }, 'form')).not.toHaveProperty('quality');
    expect(refusal({ quality: 'BEST' }, 'json').message).toBe('quality must be fast or best, not "BEST".');
    for (const quality of ['toString', 1, true]) expect(refusal({ quality }, 'json').message).toMatch(/^quality must be fast or best, not /);
  });

  it("reads size as remove.bg's cap in pixels, none for full", () => {
    expect(parseOutputOptions({ size: 'medium' }, 'json').maxPixels).toBe(1_500_000);
    expect(parseOutputOptions({ size: 'preview' }, 'form').maxPixels).toBe(250_000);
    expect(parseOutputOptions({ size: 'full' }, 'json').maxPixels).toBeUndefined();
    expect(parseOutputOptions({ size: '' }, 'form')).not.toHaveProperty('maxPixels');
    expect(refusal({ size: 'huge' }, 'json').message).toMatch(/^size must be /);
  });

  describe('scale and position', () => {
    it('centre a scaled subject when no position is given, and place it where position says', () => {
      expect(parseOutputOptions({ scale: '50%' }, 'json').placement).toEqual({ scale: 0.5, position: { x: 0.5, y: 0.5 } });
      expect(parseOutputOptions({ scale: '50%', position: '0% 100%' }, 'form').placement).toEqual({ scale: 0.5, position: { x: 0, y: 1 } });
      expect(parseOutputOptions({ position: '25%' }, 'json').placement).toEqual({ scale: undefined, position: { x: 0.25, y: 0.25 } });
    });

    it('leave the subject where it was when both are original or absent', () => {
      for (const fields of [{ scale: 'original' }, { position: 'original' }, { scale: 'original', position: 'original' }, { scale: '', position: '' }]) {
        expect(parseOutputOptions(fields, 'form')).not.toHaveProperty('placement');
      }
    });

    it('refuse a scale or a position out of range', () => {
      expect(refusal({ scale: '5%' }, 'json').message).toMatch(/^scale must be /);
      expect(refusal({ position: '101%' }, 'json').message).toMatch(/^position must be /);
    });
  });

  describe('add_shadow', () => {
    it('adds a drop shadow at half opacity unless shadow_type and shadow_opacity say otherwise', () => {
      expect(parseOutputOptions({ add_shadow: true }, 'json').shadow).toEqual({ kind: 'drop', opacity: 0.5 });
      expect(parseOutputOptions({ add_shadow: 'true', shadow_type: 'car', shadow_opacity: '20' }, 'form').shadow).toEqual({ kind: 'car', opacity: 0.2 });
      expect(parseOutputOptions({ add_shadow: 'true', shadow_type: '', shadow_opacity: '' }, 'form').shadow).toEqual({ kind: 'drop', opacity: 0.5 });
    });

    it('adds none when false or absent, whatever shadow_type and shadow_opacity say', () => {
      expect(parseOutputOptions({ add_shadow: false, shadow_type: 'car' }, 'json')).not.toHaveProperty('shadow');
      expect(parseOutputOptions({ shadow_type: 'car', shadow_opacity: 20 }, 'json')).not.toHaveProperty('shadow');
      expect(parseOutputOptions({ add_shadow: '' }, 'form')).not.toHaveProperty('shadow');
    });

    it('refuses a value that is not a boolean, and a bad shadow_type or shadow_opacity', () => {
      expect(refusal({ add_shadow: 'yes' }, 'form').message).toMatch(/^add_shadow must be true or false/);
      expect(refusal({ add_shadow: 'true' }, 'json').message).toMatch(/^add_shadow must be true or false/);
      expect(refusal({ add_shadow: true, shadow_type: 'long' }, 'json').message).toMatch(/^shadow_type must be /);
      expect(refusal({ add_shadow: true, shadow_opacity: 101 }, 'json').message).toMatch(/^shadow_opacity must be /);
    });
  });

  it('takes a model name trimmed, lower-case letters, digits and . _ - only', () => {
    expect(parseOutputOptions({ model: ' isnet_v1.2-int8 ' }, 'json').model).toBe('isnet_v1.2-int8');
    expect(parseOutputOptions({ model: '' }, 'form')).not.toHaveProperty('model');
    expect(refusal({ model: 'Big Model' }, 'json').message).toBe(
      `model must be the name of one of the server's models (lower-case letters, digits, '.', '_', '-'), not "Big Model".`,
    );
    for (const model of [7, ['u2net'], '-first', 'a'.repeat(65)]) expect(refusal({ model }, 'json').message).toMatch(/^model must be /);
  });

  it('shows at most 60 characters of a refused value', () => {
    const message = refusal({ channels: 'a'.repeat(100) }, 'json').message;
    expect(message).toBe(`channels must be rgba or alpha, not ${JSON.stringify('a'.repeat(100)).slice(0, 60)}.`);
  });
});

describe('answerSpec', () => {
  it('carries the format, channels and sizes, with no background or crop unless asked', () => {
    const spec = answerSpec(parseOutputOptions({ max_width: 100, max_height: 50 }, 'json'), 'webp');
    expect(spec).toMatchObject({ format: 'webp', channels: 'rgba', maxWidth: 100, maxHeight: 50 });
    expect(spec.background).toBeUndefined();
    expect(spec.crop).toBeUndefined();
    expect(answerSpec(parseOutputOptions({ channels: 'alpha' }, 'json'), 'png').channels).toBe('alpha');
    for (const absent of ['maxPixels', 'placement', 'shadow']) expect(spec).not.toHaveProperty(absent);
    expect(answerSpec(parseOutputOptions({ size: 'full' }, 'json'), 'png')).not.toHaveProperty('maxPixels');
  });

  it('carries the size cap, the placement and the shadow when asked', () => {
    const spec = answerSpec(parseOutputOptions({ size: 'hd', scale: '80%', position: '10% 90%', add_shadow: true, shadow_type: '3D' }, 'json'), 'png');
    expect(spec).toMatchObject({ maxPixels: 4_000_000, placement: { scale: 0.8, position: { x: 0.1, y: 0.9 } }, shadow: { kind: '3D', opacity: 0.5 } });
  });

  it('turns bg_color into a colour, bg_image_url into an image, and crop into its margin', () => {
    expect(answerSpec(parseOutputOptions({ bg_color: '000' }, 'json'), 'jpeg').background).toEqual({ colour: [0, 0, 0, 255] });
    expect(answerSpec(parseOutputOptions({ bg_image_url: 'https://example.com/a.png' }, 'json'), 'png').background).toEqual({ image: true });
    expect(answerSpec(parseOutputOptions({ crop: true, crop_margin: '10%' }, 'json'), 'png').crop).toEqual({ margin: pc(10) });
    expect(answerSpec(parseOutputOptions({ crop: false, crop_margin: '10%' }, 'json'), 'png').crop).toBeUndefined();
  });
});
