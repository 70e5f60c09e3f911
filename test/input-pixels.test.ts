import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RawImage } from '../src/image/raw-image.js';
import { ModelService } from '../src/model/model-service.js';
import type { Segmenter } from '../src/model/segmenter.js';
import { startTestApp, type TestApp } from './helpers/app.js';

// What the decode promises, checked on pixels: every colour space ends as 8-bit sRGB with its
// colours kept, transparency is flattened on white before the model sees the picture, and the
// EXIF orientation is applied before anything else, so the answer and its X-Foreground-*
// headers are in the upright picture's pixels. The model is a stand-in that records what it
// is shown and marks as foreground what the test says (the real model's masks are the
// quality tests' business); the images are made here.

type Rgb = [number, number, number];
const RED: Rgb = [230, 20, 20];
const GREEN: Rgb = [20, 180, 40];
const BLUE: Rgb = [30, 40, 220];
const YELLOW: Rgb = [240, 220, 30];

/** A stand-in model: keeps a copy of each picture it is shown and answers `mask(picture)`. */
function recordingSegmenter(): Segmenter & { seen: RawImage[]; mask: (picture: RawImage) => Uint8Array } {
  const segmenter = {
    size: 1024,
    seen: [] as RawImage[],
    mask: (picture: RawImage) => new Uint8Array(picture.width * picture.height).fill(255),
    async segment(pictures: readonly RawImage[]) {
      return pictures.map((picture) => {
        segmenter.seen.push({ ...picture, data: Uint8Array.from(picture.data) });
        return { data: segmenter.mask(picture), width: picture.width, height: picture.height, channels: 1 as const };
      });
    },
    close: async () => {},
  };
  return segmenter;
}

/** Foreground where the picture is red, as RED is after a JPEG round trip. */
const redIsForeground = (picture: RawImage) => {
  const mask = new Uint8Array(picture.width * picture.height);
  for (let i = 0; i < mask.length; i++) {
    const [r, g, b] = [picture.data[3 * i], picture.data[3 * i + 1], picture.data[3 * i + 2]];
    mask[i] = r > 150 && g < 100 && b < 100 ? 255 : 0;
  }
  return mask;
};

/** Raw RGB of `width × height` with four quadrants of colour: the asymmetric picture of these tests. */
function quadrants(width: number, height: number, [tl, tr, bl, br]: Rgb[] = [RED, GREEN, BLUE, YELLOW]): Buffer {
  const data = Buffer.alloc(width * height * 3);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const colour = y < height / 2 ? (x < width / 2 ? tl : tr) : x < width / 2 ? bl : br;
      data.set(colour, 3 * (y * width + x));
    }
  }
  return data;
}

const rawInput = (data: Buffer, width: number, height: number, channels: 1 | 3 | 4) => sharp(data, { raw: { width, height, channels } });

let t: TestApp;
let auth: string;
const model = recordingSegmenter();

beforeAll(async () => {
  t = await startTestApp({}, { model: ModelService.ofSegmenter(model) });
  auth = await t.managedToken();
});
afterAll(async () => t?.close());

/** Sends `bytes` and returns the answer's RGBA pixels, its headers, and the picture the model was shown. */
async function cut(bytes: Buffer, mask?: (picture: RawImage) => Uint8Array) {
  model.mask = mask ?? ((picture) => new Uint8Array(picture.width * picture.height).fill(255));
  const before = model.seen.length;
  const response = await t.app.inject({ method: 'POST', url: '/api/v1/background/remove/base64', headers: { authorization: auth }, payload: { image_base64: bytes.toString('base64') } });
  expect(response.statusCode, response.body.slice(0, 300)).toBe(200);
  const png = Buffer.from(response.json().image_base64, 'base64');
  const { data, info } = await sharp(png).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
  expect(model.seen).toHaveLength(before + 1);
  const shown = model.seen[before];
  return {
    headers: response.headers,
    width: info.width,
    height: info.height,
    /** RGBA at a point given as fractions of the answer's width and height. */
    at(fx: number, fy: number): number[] {
      const i = 4 * (Math.floor(fy * info.height) * info.width + Math.floor(fx * info.width));
      return [...data.subarray(i, i + 4)];
    },
    /** RGB the model was shown at the same fractions of its square picture. */
    shownAt(fx: number, fy: number): number[] {
      const i = 3 * (Math.floor(fy * shown.height) * shown.width + Math.floor(fx * shown.width));
      return [...shown.data.subarray(i, i + 3)];
    },
  };
}

/** Each channel within `tolerance` of `expected`. */
function expectColour(actual: number[], expected: number[], tolerance: number, what: string) {
  const off = actual.slice(0, expected.length).map((value, i) => Math.abs(value - expected[i]));
  expect(Math.max(...off), `${what}: ${actual.join(',')} against ${expected.join(',')}`).toBeLessThanOrEqual(tolerance);
}

describe('colour spaces end as 8-bit sRGB with their colours', () => {
  it('CMYK: red stays red and blue blue, in the answer and in what the model sees', async () => {
    const cmyk = await rawInput(quadrants(96, 64), 96, 64, 3).toColourspace('cmyk').jpeg({ quality: 95 }).toBuffer();
    const meta = await sharp(cmyk).metadata();
    expect([meta.space, meta.channels]).toEqual(['cmyk', 4]);
    const answer = await cut(cmyk);
    // CMYK's gamut and the JPEG move a colour a little (this blue most: it comes back duller);
    // an inverted or uncorrected CMYK decode turns red cyan and blue yellow.
    expectColour(answer.at(0.25, 0.25), [...RED, 255], 40, 'red in the answer');
    expectColour(answer.shownAt(0.25, 0.25), RED, 40, 'red shown to the model');
    for (const [r, g, b] of [answer.at(0.25, 0.75), answer.shownAt(0.25, 0.75)]) expect(b - Math.max(r, g), `blue: ${r},${g},${b}`).toBeGreaterThan(60);
  });

  it('16-bit: each colour comes back as its 8-bit value', async () => {
    const deep = await rawInput(quadrants(96, 64), 96, 64, 3).toColourspace('rgb16').png().toBuffer();
    expect((await sharp(deep).metadata()).depth).toBe('ushort');
    const answer = await cut(deep);
    for (const [fx, fy, colour] of [[0.25, 0.25, RED], [0.75, 0.25, GREEN], [0.25, 0.75, BLUE], [0.75, 0.75, YELLOW]] as const) {
      expectColour(answer.at(fx, fy), [...colour, 255], 1, '16-bit in the answer');
      expectColour(answer.shownAt(fx, fy), colour, 1, '16-bit shown to the model');
    }
  });

  it('greyscale: grey levels become equal R, G and B', async () => {
    const levels = Buffer.alloc(96 * 64);
    for (let y = 0; y < 64; y++) for (let x = 0; x < 96; x++) levels[y * 96 + x] = x < 48 ? 60 : 190;
    const grey = await rawInput(levels, 96, 64, 1).toColourspace('b-w').png().toBuffer();
    expect((await sharp(grey).metadata()).channels).toBe(1);
    const answer = await cut(grey);
    expectColour(answer.at(0.25, 0.5), [60, 60, 60, 255], 1, 'dark grey in the answer');
    expectColour(answer.at(0.75, 0.5), [190, 190, 190, 255], 1, 'light grey in the answer');
    expectColour(answer.shownAt(0.25, 0.5), [60, 60, 60], 1, 'dark grey shown to the model');
  });

  it('palette: each palette colour comes back as itself', async () => {
    const palette = await rawInput(quadrants(96, 64), 96, 64, 3).png({ palette: true, colours: 4, dither: 0 }).toBuffer();
    expect((await sharp(palette).metadata()).isPalette).toBe(true);
    const answer = await cut(palette);
    for (const [fx, fy, colour] of [[0.25, 0.25, RED], [0.75, 0.25, GREEN], [0.25, 0.75, BLUE], [0.75, 0.75, YELLOW]] as const) {
      expectColour(answer.at(fx, fy), [...colour, 255], 3, 'palette in the answer');
    }
  });
});

describe('transparency', () => {
  it('is flattened on white before the model sees the picture: transparent black is white, half-transparent black mid-grey', async () => {
    // Black everywhere underneath; alpha 0 in the left third, 128 in the middle one, 255 in the right one.
    const rgba = Buffer.alloc(96 * 64 * 4);
    for (let y = 0; y < 64; y++) for (let x = 0; x < 96; x++) rgba[4 * (y * 96 + x) + 3] = x < 32 ? 0 : x < 64 ? 128 : 255;
    const png = await rawInput(rgba, 96, 64, 4).png().toBuffer();
    expect((await sharp(png).metadata()).hasAlpha).toBe(true);
    const answer = await cut(png);
    expectColour(answer.shownAt(1 / 6, 0.5), [255, 255, 255], 1, 'transparent, shown to the model');
    expectColour(answer.shownAt(0.5, 0.5), [127, 127, 127], 2, 'half transparent, shown to the model');
    expectColour(answer.shownAt(5 / 6, 0.5), [0, 0, 0], 1, 'opaque, shown to the model');
    // The answer's colours are the flattened photo's too (the stand-in kept everything).
    expectColour(answer.at(1 / 6, 0.5), [255, 255, 255, 255], 1, 'transparent, in the answer');
  });
});

/**
 * The pixels a camera stores for an upright `width × height` picture with EXIF orientation
 * `orientation`, written from the standard's table (where the stored 0th row and 0th column
 * lie in the upright picture), not with the decoder under test.
 */
function storedFor(upright: Buffer, width: number, height: number, orientation: number): { data: Buffer; width: number; height: number } {
  const swapped = orientation >= 5;
  const [sw, sh] = swapped ? [height, width] : [width, height];
  const data = Buffer.alloc(upright.length);
  for (let r = 0; r < sh; r++) {
    for (let c = 0; c < sw; c++) {
      const [x, y] = {
        1: [c, r],
        2: [width - 1 - c, r],
        3: [width - 1 - c, height - 1 - r],
        4: [c, height - 1 - r],
        5: [r, c],
        6: [width - 1 - r, c],
        7: [width - 1 - r, height - 1 - c],
        8: [r, height - 1 - c],
      }[orientation]!;
      upright.copy(data, 3 * (r * sw + c), 3 * (y * width + x), 3 * (y * width + x) + 3);
    }
  }
  return { data, width: sw, height: sh };
}

describe('EXIF orientation', () => {
  // 96×64, red in the top-left quadrant only: a mirror, a turn or a transposition each puts it
  // elsewhere or swaps the sides. The stand-in marks red as foreground.
  const [W, H] = [96, 64];
  const upright = quadrants(W, H);

  it.each([1, 2, 3, 4, 5, 6, 7, 8])('orientation %i lands upright, and X-Foreground-* is in the upright pixels', async (orientation) => {
    const stored = storedFor(upright, W, H, orientation);
    const jpeg = await rawInput(stored.data, stored.width, stored.height, 3).jpeg({ quality: 95 }).withMetadata({ orientation }).toBuffer();
    expect((await sharp(jpeg).metadata()).orientation).toBe(orientation);
    const answer = await cut(jpeg, redIsForeground);
    expect([answer.width, answer.height]).toEqual([W, H]);
    expectColour(answer.at(0.25, 0.25), [...RED, 255], 40, 'top left');
    for (const [fx, fy] of [[0.75, 0.25], [0.25, 0.75], [0.75, 0.75]]) expect(answer.at(fx, fy)[3], `alpha at ${fx},${fy}`).toBe(0);
    const box = ['left', 'top', 'width', 'height'].map((side) => Number(answer.headers[`x-foreground-${side}`]));
    // The red quadrant, give or take the edge's few pixels that the model-size picture blurs.
    const expected = [0, 0, W / 2, H / 2];
    box.forEach((value, i) => expect(Math.abs(value - expected[i]), `X-Foreground-* ${box.join(',')}`).toBeLessThanOrEqual(3));
  });
});
