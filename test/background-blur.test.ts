import sharp, { type OutputInfo } from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RawImage } from '../src/image/raw-image.js';
import { ModelService } from '../src/model/model-service.js';
import type { Segmenter } from '../src/model/segmenter.js';
import { startTestApp, type TestApp } from './helpers/app.js';

/**
 * bg_blur: the cut-out over the photo's own background, blurred. A model whose mask is the
 * middle half of the picture cuts a 96×64 checkerboard of 4-pixel squares: inside, the
 * squares must stay as they were; outside, they must be smoothed towards their grey mean.
 */

const WIDTH = 96;
const HEIGHT = 64;

function middleSegmenter(): Segmenter {
  const size = 32;
  return {
    size,
    async segment(pictures: readonly RawImage[]) {
      return pictures.map(() => {
        const data = new Uint8Array(size * size);
        for (let y = 8; y < 24; y++) data.fill(255, y * size + 8, y * size + 24);
        return { data, width: size, height: size, channels: 1 };
      });
    },
    close: async () => {},
  };
}

async function checkerboard(): Promise<Buffer> {
  const data = Buffer.alloc(WIDTH * HEIGHT * 3);
  for (let y = 0; y < HEIGHT; y++) for (let x = 0; x < WIDTH; x++) data.fill((Math.floor(x / 4) + Math.floor(y / 4)) % 2 ? 255 : 0, (y * WIDTH + x) * 3, (y * WIDTH + x) * 3 + 3);
  return sharp(data, { raw: { width: WIDTH, height: HEIGHT, channels: 3 } }).png().toBuffer();
}

/** The spread of the red channel (its standard deviation) over a box of the answer. */
function spread(image: { data: Buffer; info: OutputInfo }, left: number, top: number, width: number, height: number): number {
  const values: number[] = [];
  for (let y = top; y < top + height; y++) for (let x = left; x < left + width; x++) values.push(image.data[(y * image.info.width + x) * image.info.channels]);
  const mean = values.reduce((a, b) => a + b, 0) / values.length;
  return Math.sqrt(values.reduce((a, b) => a + (b - mean) ** 2, 0) / values.length);
}

describe('bg_blur', () => {
  let t: TestApp;
  let managed: string;
  let photo: string;
  beforeAll(async () => {
    t = await startTestApp({ refine: false }, { model: ModelService.ofSegmenter(middleSegmenter()) });
    managed = await t.managedToken();
    photo = (await checkerboard()).toString('base64');
  });
  afterAll(async () => t?.close());

  const remove = (options: Record<string, unknown>) =>
    t.app.inject({ method: 'POST', url: '/api/v1/background/remove/base64', headers: { authorization: managed, accept: 'image/png' }, payload: { image_base64: photo, ...options } });

  it('keeps the subject sharp and softens the photo around it, with no transparency left', async () => {
    const answer = await remove({ bg_blur: 8 });
    expect(answer.statusCode, answer.body.slice(0, 200)).toBe(200);
    const image = await sharp(answer.rawPayload).raw().toBuffer({ resolveWithObject: true });
    expect([image.info.width, image.info.height, image.info.channels]).toEqual([WIDTH, HEIGHT, 3]);
    // The subject, the middle half, is the checkerboard as it was: black and white squares.
    expect(spread(image, 32, 20, 32, 24)).toBeGreaterThan(100);
    // The background, a band along the top, is blurred towards its grey: neither the squares
    // (a spread near 127) nor a flat colour laid in their place.
    expect(spread(image, 0, 0, WIDTH, 8)).toBeLessThan(40);
    expect(spread(image, 0, 0, WIDTH, 8)).toBeGreaterThan(0);
    const mean = image.data.subarray(0, WIDTH * 8 * 3).reduce((a, b) => a + b, 0) / (WIDTH * 8 * 3);
    expect(mean).toBeGreaterThan(90);
    expect(mean).toBeLessThan(165);
  });

  it('blurs more with a larger radius, and follows a crop', async () => {
    const light = await sharp((await remove({ bg_blur: 1 })).rawPayload).raw().toBuffer({ resolveWithObject: true });
    const heavy = await sharp((await remove({ bg_blur: 20 })).rawPayload).raw().toBuffer({ resolveWithObject: true });
    expect(spread(light, 0, 0, WIDTH, 8)).toBeGreaterThan(spread(heavy, 0, 0, WIDTH, 8) + 20);
    // The background is the photo under the answer's frame: the frame is the crop's, as without it.
    const cropped = await remove({ bg_blur: 6, crop: true, crop_margin: '10px' });
    const plain = await remove({ crop: true, crop_margin: '10px' });
    expect(cropped.statusCode).toBe(200);
    expect([cropped.headers['x-width'], cropped.headers['x-height']]).toEqual([plain.headers['x-width'], plain.headers['x-height']]);
    expect(Number(cropped.headers['x-width'])).toBeLessThan(WIDTH);
  });

  it('is one background: not with bg_color or an alpha answer', async () => {
    const both = await remove({ bg_blur: 8, bg_color: 'red' });
    expect(both.statusCode).toBe(400);
    expect(both.json().detail).toBe('Send at most one background, not bg_color and bg_blur.');
    const mask = await remove({ bg_blur: 8, channels: 'alpha' });
    expect(mask.json().detail).toMatch(/^channels=alpha answers the mask alone.*leave out bg_blur/);
    for (const bg_blur of [0, 501, '5px', 'soft']) expect((await remove({ bg_blur })).json().detail).toMatch(/^bg_blur must be a whole number of pixels from 1 to 500/);
  });
});
