import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ModelService } from '../src/model/model-service.js';
import { memoSegmenter } from '../scripts/eval/memo-segmenter.js';
import { sharedSegmenter, startTestApp, type TestApp } from './helpers/app.js';
import { makeSubjectPhoto, multipartUpload } from './helpers/images.js';
import { multipartBody } from '../scripts/lib/multipart-body.js';

/**
 * The output options and the raw answer, checked on the pixels of real answers:
 * the real model on a generated photo of a ball (640×480, the ball in the middle). The model
 * runs once per distinct picture (the eval's memo): the options are all after it.
 */

let t: TestApp;
let auth: string;
let photo: Buffer;
let server: Server;
let base: string;
/** The default answer, decoded: every option is compared with it. */
let plain: { data: Buffer; width: number; height: number };

type Injected = Awaited<ReturnType<TestApp['app']['inject']>>;

const remove = (options: Record<string, unknown> = {}, headers: Record<string, string> = {}) =>
  t.app.inject({ method: 'POST', url: '/api/v1/background/remove/base64', headers: { authorization: auth, ...headers }, payload: { image_base64: photo.toString('base64'), ...options } });

/** The image of an answer, JSON or raw. */
function imageOf(response: Injected): Buffer {
  expect(response.statusCode, response.body.slice(0, 300)).toBe(200);
  return /^application\/json/.test(String(response.headers['content-type'])) ? Buffer.from(response.json().image_base64, 'base64') : response.rawPayload;
}

async function rgbaOf(response: Injected) {
  const { data, info } = await sharp(imageOf(response)).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
  return { data, width: info.width, height: info.height };
}

const header = (response: Injected, name: string) => Number(response.headers[name]);
const foregroundOf = (response: Injected) => ({
  left: header(response, 'x-foreground-left'),
  top: header(response, 'x-foreground-top'),
  width: header(response, 'x-foreground-width'),
  height: header(response, 'x-foreground-height'),
});

beforeAll(async () => {
  t = await startTestApp({ urlAllowPrivate: true, rateLimit: 0 }, { model: ModelService.ofSegmenter(memoSegmenter(await sharedSegmenter())) });
  auth = await t.managedToken();
  photo = await (await makeSubjectPhoto(640, 480)).jpeg({ quality: 92 }).toBuffer();
  const background = await sharp({ create: { width: 40, height: 30, channels: 3, background: { r: 10, g: 200, b: 30 } } }).png().toBuffer();
  server = createServer((_req, res) => res.writeHead(200, { 'content-type': 'image/png' }).end(background));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  plain = await rgbaOf(await remove());
});

afterAll(async () => {
  server?.close();
  await t?.close();
});

describe('the answer without options', () => {
  it('is the JSON PNG of the specification, with the size and the subject\'s box in headers', async () => {
    const response = await remove();
    expect(response.headers['content-type']).toMatch(/^application\/json/);
    expect((await sharp(imageOf(response)).metadata()).format).toBe('png');
    expect([header(response, 'x-width'), header(response, 'x-height')]).toEqual([640, 480]);
    // The ball: radius 0.3 × 480 = 144 around the centre.
    const box = foregroundOf(response);
    expect(Math.abs(box.left - (320 - 144))).toBeLessThanOrEqual(8);
    expect(Math.abs(box.width - 288)).toBeLessThanOrEqual(16);
    expect(Math.abs(box.top - (240 - 144))).toBeLessThanOrEqual(8);
  });

  it('comes as the PNG itself, byte for byte the JSON one, when Accept asks for an image', async () => {
    const json = imageOf(await remove());
    for (const accept of ['image/png', 'image/*', 'application/json;q=0.5, image/png']) {
      const raw = await remove({}, { accept });
      expect(raw.headers['content-type']).toBe('image/png');
      expect(raw.rawPayload.equals(json), accept).toBe(true);
    }
    // */* and a JSON preference keep the specification's JSON.
    for (const accept of ['*/*', 'application/json', 'image/png;q=0.4, application/json']) expect((await remove({}, { accept })).headers['content-type']).toMatch(/^application\/json/);
  });
});

describe('format', () => {
  it('jpg is flattened on white: white corners, the subject in colour, image/jpeg', async () => {
    const response = await remove({ format: 'jpg' }, { accept: 'image/*' });
    expect(response.headers['content-type']).toBe('image/jpeg');
    const { data, info } = await sharp(response.rawPayload).raw().toBuffer({ resolveWithObject: true });
    expect(info.channels).toBe(3);
    for (const [x, y] of [[0, 0], [639, 0], [0, 479], [639, 479]]) {
      const at = 3 * (y * 640 + x);
      expect(Math.min(data[at], data[at + 1], data[at + 2]), `corner ${x},${y}`).toBeGreaterThan(245);
    }
    const centre = 3 * (240 * 640 + 320);
    expect(data[centre]).toBeGreaterThan(data[centre + 2] + 60); // orange, not white
  });

  it('webp keeps the alpha exactly; Accept chooses WebP when format is absent, and format wins over Accept', async () => {
    const chosen = await remove({}, { accept: 'image/webp' });
    expect(chosen.headers['content-type']).toBe('image/webp');
    const webp = await rgbaOf(chosen);
    const alpha = (image: { data: Buffer }) => Buffer.from(image.data.filter((_, i) => i % 4 === 3));
    expect(alpha(webp).equals(alpha(plain))).toBe(true);
    const conflict = await remove({ format: 'webp' }, { accept: 'image/png' });
    expect(conflict.headers['content-type']).toBe('image/webp');
    expect((await sharp(conflict.rawPayload).metadata()).format).toBe('webp');
  });
});

describe('channels: alpha', () => {
  it('is exactly the alpha of the rgba answer, for the same options', async () => {
    for (const options of [{}, { crop: true, crop_margin: 12, max_width: 200 }]) {
      const rgba = await rgbaOf(await remove(options));
      const mask = imageOf(await remove({ ...options, channels: 'alpha' }));
      expect((await sharp(mask).metadata()).channels).toBe(1);
      const { data, info } = await sharp(mask).extractChannel(0).raw().toBuffer({ resolveWithObject: true });
      expect([info.width, info.height]).toEqual([rgba.width, rgba.height]);
      expect(data.equals(Buffer.from(rgba.data.filter((_, i) => i % 4 === 3))), JSON.stringify(options)).toBe(true);
    }
  });

  it('as a JPEG is within 2 levels of the PNG mask', async () => {
    const png = imageOf(await remove({ channels: 'alpha' }));
    const jpeg = imageOf(await remove({ channels: 'alpha', format: 'jpg' }));
    expect((await sharp(jpeg).metadata()).format).toBe('jpeg');
    const [lossless, lossy] = await Promise.all([png, jpeg].map((bytes) => sharp(bytes).extractChannel(0).raw().toBuffer({ resolveWithObject: true })));
    expect([lossy.info.width, lossy.info.height]).toEqual([lossless.info.width, lossless.info.height]);
    let largest = 0;
    for (let i = 0; i < lossless.data.length; i++) largest = Math.max(largest, Math.abs(lossless.data[i] - lossy.data[i]));
    expect(largest).toBeLessThanOrEqual(2);
    // The mask has an edge, so a JPEG of it is not a copy: the bound is met by its encoding, not by luck.
    expect(new Set(lossless.data).size).toBeGreaterThan(2);
  });
});

describe('bg_color and bg_image_url', () => {
  it('composites onto the colour: its corners, opaque; rrggbbaa leaves that alpha', async () => {
    const { data } = await rgbaOf(await remove({ bg_color: '#3366cc' }));
    expect([...data.subarray(0, 4)]).toEqual([0x33, 0x66, 0xcc, 255]);
    expect(data.filter((_, i) => i % 4 === 3).every((alpha) => alpha === 255)).toBe(true);
    const translucent = await rgbaOf(await remove({ bg_color: '3366cc80' }));
    expect([...translucent.data.subarray(0, 4)]).toEqual([0x33, 0x66, 0xcc, 0x80]);
    // The subject itself is untouched where it is opaque.
    const centre = 4 * (240 * 640 + 320);
    expect([...data.subarray(centre, centre + 4)]).toEqual([...plain.data.subarray(centre, centre + 4)]);
  });

  it('composites onto an image fetched from bg_image_url, scaled to cover the result', async () => {
    const { data } = await rgbaOf(await remove({ bg_image_url: `${base}/bg.png` }));
    for (const corner of [0, 4 * 639, 4 * 640 * 479]) expect([...data.subarray(corner, corner + 4)]).toEqual([10, 200, 30, 255]);
  });

  it('refuses a private bg_image_url exactly as image_url is refused', async () => {
    const strict = await startTestApp({ rateLimit: 0 });
    try {
      const token = await strict.managedToken();
      const send = (payload: object) => strict.app.inject({ method: 'POST', url: '/api/v1/background/remove/base64', headers: { authorization: token }, payload });
      const viaBackground = await send({ image_base64: photo.toString('base64'), bg_image_url: 'http://127.0.0.1:9/bg.png' });
      const viaImage = await strict.app.inject({ method: 'POST', url: '/api/v1/background/remove/url', headers: { authorization: token }, payload: { image_url: 'http://127.0.0.1:9/bg.png' } });
      expect([viaBackground.statusCode, viaBackground.json().code]).toEqual([400, 'url_not_allowed']);
      expect(viaBackground.json().detail).toBe(viaImage.json().detail.replace(/^image_url/, 'bg_image_url'));
    } finally {
      await strict.close();
    }
  });
});

describe('crop and crop_margin', () => {
  it('crops to the box X-Foreground-* names, with the default answer\'s pixels', async () => {
    const response = await remove({ crop: true });
    const box = foregroundOf(response);
    const cropped = await rgbaOf(response);
    expect([cropped.width, cropped.height]).toEqual([box.width, box.height]);
    expect([header(response, 'x-width'), header(response, 'x-height')]).toEqual([box.width, box.height]);
    for (let y = 0; y < box.height; y += 7) {
      const row = cropped.data.subarray(4 * y * box.width, 4 * (y + 1) * box.width);
      const original = plain.data.subarray(4 * ((box.top + y) * 640 + box.left), 4 * ((box.top + y) * 640 + box.left + box.width));
      expect(row.equals(original), `row ${y}`).toBe(true);
    }
  });

  it('adds exactly its pixels, or its percent of the box, on every side; past the edge is transparent', async () => {
    const box = foregroundOf(await remove({ crop: true }));
    const pixels = await rgbaOf(await remove({ crop: true, crop_margin: '30px' }));
    expect([pixels.width, pixels.height]).toEqual([box.width + 60, box.height + 60]);
    const percent = await rgbaOf(await remove({ crop: true, crop_margin: '10%' }));
    expect([percent.width, percent.height]).toEqual([box.width + 2 * Math.round(box.width / 10), box.height + 2 * Math.round(box.height / 10)]);
    // 200 px on each side reaches past the photo's edges: the added area is transparent.
    const wide = await rgbaOf(await remove({ crop: true, crop_margin: 200 }));
    expect([wide.width, wide.height]).toEqual([box.width + 400, box.height + 400]);
    expect(wide.data[3]).toBe(0);
    // With a background, the added area is the background.
    const onWhite = await rgbaOf(await remove({ crop: true, crop_margin: 200, bg_color: 'fff' }));
    expect([...onWhite.data.subarray(0, 4)]).toEqual([255, 255, 255, 255]);
  });
});

describe('max_width and max_height', () => {
  it('scales down inside them keeping the aspect ratio, never up, and names the box in the input\'s pixels', async () => {
    const half = await remove({ max_width: 320 });
    expect([header(half, 'x-width'), header(half, 'x-height')]).toEqual([320, 240]);
    const scaled = await rgbaOf(half);
    expect([scaled.width, scaled.height]).toEqual([320, 240]);
    const full = foregroundOf(await remove());
    const box = foregroundOf(half);
    for (const side of ['left', 'top', 'width', 'height'] as const) expect(Math.abs(box[side] - full[side]), side).toBeLessThanOrEqual(3);
    expect([(await rgbaOf(await remove({ max_height: 120 }))).width]).toEqual([160]);
    expect([(await rgbaOf(await remove({ max_width: 2000, max_height: 2000 }))).width]).toEqual([640]);
  });

  it('after a crop, fits the cropped result', async () => {
    const box = foregroundOf(await remove({ crop: true }));
    const fitted = await rgbaOf(await remove({ crop: true, max_width: 100 }));
    expect(fitted.width).toBe(100);
    expect(Math.abs(fitted.height - (100 * box.height) / box.width)).toBeLessThanOrEqual(1);
  });
});

describe('roi', () => {
  it('keeps everything outside the region transparent, in pixels or percent', async () => {
    for (const roi of ['320 0 640 480', '50% 0% 100% 100%']) {
      const response = await remove({ roi });
      const { data } = await rgbaOf(response);
      let outside = 0;
      for (let y = 0; y < 480; y++) for (let x = 0; x < 320; x++) outside = Math.max(outside, data[4 * (y * 640 + x) + 3]);
      expect(outside, roi).toBe(0);
      expect(foregroundOf(response).left, roi).toBeGreaterThanOrEqual(320);
      // The right half of the ball is still cut out.
      expect(data[4 * (240 * 640 + 400) + 3], roi).toBe(255);
    }
  });
});

describe('the upload', () => {
  it('takes the options as form fields', async () => {
    const form = multipartBody([
      { name: 'file', filename: 'ball.jpg', contentType: 'image/jpeg', data: photo },
      { name: 'format', data: 'jpg' },
      { name: 'crop', data: 'true' },
      { name: 'max_width', data: '100' },
    ]);
    const response = await t.app.inject({ method: 'POST', url: '/api/v1/background/remove/multipart', headers: { authorization: auth, 'content-type': form.contentType, accept: 'image/*' }, payload: form.body });
    expect(response.headers['content-type']).toBe('image/jpeg');
    expect(header(response, 'x-width')).toBe(100);
    const plainUpload = multipartUpload(photo);
    const json = await t.app.inject({ method: 'POST', url: '/api/v1/background/remove/multipart', headers: { authorization: auth, 'content-type': plainUpload.contentType }, payload: plainUpload.payload });
    expect(imageOf(json).equals(imageOf(await remove()))).toBe(true);
  });
});
