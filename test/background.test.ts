import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { alphaAt, makeClutterPhoto, makePhoto, makeSubjectPhoto, multipartUpload } from './helpers/images.js';
import { startTestApp, type TestApp } from './helpers/app.js';

let t: TestApp;
let auth: string;
let photo: Buffer;
let server: Server;
let serverUrl: string;

beforeAll(async () => {
  t = await startTestApp({ urlAllowPrivate: true });
  auth = await t.managedToken();
  photo = await makePhoto('jpeg', 640, 480);
  server = createServer((req, res) => {
    if (req.url === '/photo.jpg') res.writeHead(200, { 'content-type': 'image/jpeg' }).end(photo);
    else res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  serverUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server?.close();
  await t?.close();
});

/** Checks a 200 answer is `{ image_base64 }` of an RGBA PNG of the input's size with the ball kept and the backdrop gone. */
async function expectCutout(response: { statusCode: number; headers: Record<string, unknown>; json: () => any }, width: number, height: number) {
  expect(response.statusCode, JSON.stringify(response.json())).toBe(200);
  expect(response.headers['content-type']).toMatch(/^application\/json/);
  const body = response.json();
  expect(Object.keys(body)).toEqual(['image_base64']);
  expect(body.image_base64).toMatch(/^[A-Za-z0-9+/]+=*$/);
  const png = Buffer.from(body.image_base64, 'base64');
  const meta = await sharp(png).metadata();
  expect(meta.format).toBe('png');
  expect([meta.width, meta.height, meta.channels]).toEqual([width, height, 4]);
  expect(await alphaAt(png, 0.5, 0.5)).toBeGreaterThan(200);
  expect(await alphaAt(png, 0.03, 0.03)).toBeLessThan(30);
  expect(await alphaAt(png, 0.97, 0.97)).toBeLessThan(30);
  return png;
}

describe('the three background endpoints', () => {
  it('base64: removes the backdrop and keeps the subject', async () => {
    const response = await t.app.inject({
      method: 'POST',
      url: '/api/v1/background/remove/base64',
      headers: { authorization: auth },
      payload: { image_base64: photo.toString('base64') },
    });
    const png = await expectCutout(response, 640, 480);
    // The kept pixels are the original's, not repainted.
    const [original, cut] = await Promise.all([
      sharp(photo).extract({ left: 300, top: 220, width: 1, height: 1 }).raw().toBuffer(),
      sharp(png).extract({ left: 300, top: 220, width: 1, height: 1 }).raw().toBuffer(),
    ]);
    expect([...cut.subarray(0, 3)]).toEqual([...original]);
  });

  it('base64: accepts a data URL and a Bearer managed token', async () => {
    const response = await t.app.inject({
      method: 'POST',
      url: '/api/v1/background/remove/base64',
      headers: { authorization: `Bearer ${auth}` },
      payload: { image_base64: `data:image/jpeg;base64,${photo.toString('base64')}` },
    });
    await expectCutout(response, 640, 480);
  });

  it('multipart: takes the file part named file', async () => {
    const { contentType, payload } = multipartUpload(photo);
    const response = await t.app.inject({
      method: 'POST',
      url: '/api/v1/background/remove/multipart',
      headers: { authorization: auth, 'content-type': contentType },
      payload,
    });
    await expectCutout(response, 640, 480);
  });

  it('url: fetches the image itself', async () => {
    const response = await t.app.inject({
      method: 'POST',
      url: '/api/v1/background/remove/url',
      headers: { authorization: auth },
      payload: { image_url: `${serverUrl}/photo.jpg` },
    });
    await expectCutout(response, 640, 480);
  });
});

describe('quality and X-Uncertainty', () => {
  const remove = (image: Buffer, fields: Record<string, unknown>) =>
    t.app.inject({ method: 'POST', url: '/api/v1/background/remove/base64', headers: { authorization: auth }, payload: { image_base64: image.toString('base64'), ...fields } });
  const uncertainty = (response: { headers: Record<string, unknown> }) => Number(response.headers['x-uncertainty']);

  it('best cuts the ball as fast does, with less doubt; both say how doubtful they are', async () => {
    const [best, fast] = await Promise.all([remove(photo, { quality: 'best' }), remove(photo, { quality: 'fast' })]);
    await expectCutout(best, 640, 480);
    await expectCutout(fast, 640, 480);
    for (const response of [best, fast]) expect(response.headers['x-uncertainty']).toMatch(/^(0|1)\.\d{3}$/);
    expect(uncertainty(best)).toBeLessThan(0.05);
    expect(uncertainty(fast)).toBeLessThan(0.05);
    // Two masks of the same clear subject: the same box, to a pixel or two.
    for (const side of ['left', 'top', 'width', 'height']) {
      expect(Math.abs(Number(best.headers[`x-foreground-${side}`]) - Number(fast.headers[`x-foreground-${side}`])), side).toBeLessThanOrEqual(2);
    }
  });

  it('is far higher where the views disagree (a clutter of discs) than where they agree (the ball)', async () => {
    const [clutter, ball] = await Promise.all([remove(await makeClutterPhoto(), { quality: 'best' }), remove(photo, { quality: 'best' })]);
    expect([clutter.statusCode, ball.statusCode]).toEqual([200, 200]);
    expect(uncertainty(clutter)).toBeGreaterThan(0.15);
    expect(uncertainty(clutter)).toBeGreaterThan(10 * uncertainty(ball));
  });

  it('refuses a quality it does not know, naming the field and the choices', async () => {
    const response = await remove(photo, { quality: 'max' });
    expect(response.statusCode).toBe(400);
    expect(response.json()).toMatchObject({ code: 'invalid_request', detail: expect.stringMatching(/^quality must be fast, best or auto/) });
  });
});

describe('formats and orientation', () => {
  it.each(['png', 'webp', 'gif', 'tiff', 'avif'] as const)('accepts %s', async (format) => {
    const bytes = await makePhoto(format, 320, 240);
    const response = await t.app.inject({
      method: 'POST',
      url: '/api/v1/background/remove/base64',
      headers: { authorization: auth },
      payload: { image_base64: bytes.toString('base64') },
    });
    await expectCutout(response, 320, 240);
  });

  it('applies EXIF orientation: a 6-rotated 320×240 JPEG comes back 240×320', async () => {
    const rotated = await (await makeSubjectPhoto(320, 240)).jpeg().withMetadata({ orientation: 6 }).toBuffer();
    const response = await t.app.inject({
      method: 'POST',
      url: '/api/v1/background/remove/base64',
      headers: { authorization: auth },
      payload: { image_base64: rotated.toString('base64') },
    });
    await expectCutout(response, 240, 320);
  });
});

describe('CUTOUT_PNG_COMPRESSION', () => {
  it('small gives the same pixels as fast in fewer bytes', async () => {
    const tight = await startTestApp({ pngCompression: 'small' });
    try {
      const answer = async (app: TestApp) => {
        const response = await app.app.inject({
          method: 'POST',
          url: '/api/v1/background/remove/base64',
          headers: { authorization: await app.managedToken() },
          payload: { image_base64: photo.toString('base64') },
        });
        return expectCutout(response, 640, 480);
      };
      const [fast, small] = [await answer(t), await answer(tight)];
      expect(small.length).toBeLessThan(fast.length);
      expect((await sharp(small).raw().toBuffer()).equals(await sharp(fast).raw().toBuffer())).toBe(true);
    } finally {
      await tight.close();
    }
  });
});
