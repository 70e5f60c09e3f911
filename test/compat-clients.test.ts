import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { unzipSync } from 'fflate';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ModelService } from '../src/model/model-service.js';
import { memoSegmenter } from '../scripts/eval/memo-segmenter.js';
import { multipartBody, type FormPart } from '../scripts/lib/multipart-body.js';
import { sharedSegmenter, startTestApp, type TestApp } from './helpers/app.js';
import { makeSubjectPhoto } from './helpers/images.js';

/**
 * The remove.bg- and Photoroom-compatible routes, replaying the exact requests of real
 * clients (read from their source) and checking what each client reads from the answer:
 * - the npm package `remove.bg` (index.ts): JSON bodies with `Accept: application/json`,
 *   `size: "preview"`, `type: "auto"`, `crop: false` as a JSON boolean, undefined options
 *   left out; uploads as multipart; it reads `data.result_b64` and the X-* headers;
 * - remove.bg's CLI (remove-bg-cli, lib/functions.js): multipart with every field present,
 *   empty when unset, `format=zip` when a PNG is wanted; it reads `color.jpg` and
 *   `alpha.png` from the archive, and `errors[0].code/title/detail`;
 * - the Ruby gem (remove_bg): `image_url=…&size=auto` urlencoded, `Accept: *∕*`; it reads
 *   X-Width, X-Height, X-Credits-Charged (to_f), X-RateLimit-* (Reset as Unix time),
 *   `GET /v1.0/account`'s `credits` and `api` with exactly their keys, `errors[0].title`;
 * - the Python client (removebg): multipart with `roi="0 0 100% 100%"`, `"true"`/`"false"`,
 *   `scale`/`position` `original`, `type_level` `none`; urlencoded for a URL;
 * - Photoroom's segment call: multipart `image_file`, lower-case `x-api-key`, image bytes back.
 * The real model on a generated photo (a ball, 640×480); it runs once per picture (memo).
 */

let t: TestApp;
let key: string;
let photo: Buffer;
let server: Server;
let base: string;

type Injected = Awaited<ReturnType<TestApp['app']['inject']>>;

const multipart = (parts: FormPart[]) => {
  const { body, contentType } = multipartBody(parts);
  return { payload: body, headers: { 'content-type': contentType } };
};

const post = (url: string, body: { payload: unknown; headers?: Record<string, string> }, headers: Record<string, string> = {}) =>
  t.app.inject({ method: 'POST', url, payload: body.payload as string, headers: { 'X-Api-Key': key, ...body.headers, ...headers } });

async function imageSize(bytes: Buffer) {
  const { width, height, format, hasAlpha } = await sharp(bytes).metadata();
  return { width, height, format, hasAlpha };
}

beforeAll(async () => {
  t = await startTestApp({ urlAllowPrivate: true, rateLimit: 1000 }, { model: ModelService.ofSegmenter(memoSegmenter(await sharedSegmenter())) });
  key = (await t.tokens.createUserToken('compat')).tokenId;
  photo = await (await makeSubjectPhoto(640, 480)).jpeg({ quality: 92 }).toBuffer();
  server = createServer((req, res) => {
    if (req.url === '/photo.jpg') res.writeHead(200, { 'content-type': 'image/jpeg' }).end(photo);
    else res.writeHead(404).end('not found');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server?.close();
  await t?.close();
});

/** What every 200 of remove.bg carries, as its clients read it. */
function expectRemoveBgHeaders(response: Injected, width: number, height: number) {
  expect(response.statusCode, response.body.slice(0, 300)).toBe(200);
  expect(Number(response.headers['x-width'])).toBe(width);
  expect(Number(response.headers['x-height'])).toBe(height);
  expect(Number.parseFloat(String(response.headers['x-credits-charged']))).toBe(1);
  expect(Number(response.headers['x-ratelimit-limit'])).toBe(1000);
  expect(Number(response.headers['x-ratelimit-remaining'])).toBeLessThan(1000);
  const reset = Number(response.headers['x-ratelimit-reset']);
  expect(reset).toBeGreaterThanOrEqual(Math.floor(Date.now() / 1000));
  expect(reset).toBeLessThanOrEqual(Math.ceil(Date.now() / 1000) + 61);
  // The ball: radius 0.3 × 480 = 144 around the centre, in the input's pixels.
  expect(Math.abs(Number(response.headers['x-foreground-left']) - (320 - 144))).toBeLessThanOrEqual(8);
  expect(Math.abs(Number(response.headers['x-foreground-width']) - 288)).toBeLessThanOrEqual(16);
  expect(response.headers['x-type']).toBeUndefined();
}

describe('the npm package remove.bg', () => {
  // getRequestOptions(): size "preview", type "auto", crop === true, the rest undefined (left out by JSON).
  const defaults = { size: 'preview', type: 'auto', crop: false };
  const headers = { 'X-Api-Key': '', Accept: 'application/json', 'Content-Type': 'application/json' };

  it('removeBackgroundFromImageBase64: JSON in, data.result_b64 out, at preview size', async () => {
    const response = await post('/v1.0/removebg', { payload: JSON.stringify({ ...defaults, image_file_b64: photo.toString('base64') }) }, { ...headers, 'X-Api-Key': key });
    const result = Buffer.from(response.json().data.result_b64, 'base64');
    const size = await imageSize(result);
    expect(size.format).toBe('png');
    expect(size.hasAlpha).toBe(true);
    expect(size.width! * size.height!).toBeLessThanOrEqual(250_000);
    expectRemoveBgHeaders(response, size.width!, size.height!);
    const data = response.json().data;
    expect(Math.abs(data.foreground_top - (240 - 144))).toBeLessThanOrEqual(8);
    expect(data.foreground_width).toBe(Number(response.headers['x-foreground-width']));
  });

  it('removeBackgroundFromImageUrl with crop, bg_color and scale', async () => {
    const payload = JSON.stringify({ ...defaults, size: 'full', crop: true, bg_color: 'white', image_url: `${base}/photo.jpg` });
    const response = await post('/v1.0/removebg', { payload }, { ...headers, 'X-Api-Key': key });
    expect(response.statusCode, response.body.slice(0, 300)).toBe(200);
    const size = await imageSize(Buffer.from(response.json().data.result_b64, 'base64'));
    // format=auto on an opaque background: JPEG, cropped to the ball.
    expect(size.format).toBe('jpeg');
    expect(Math.abs(size.width! - 288)).toBeLessThanOrEqual(16);
  });

  it('removeBackgroundFromImageFile: multipart fields and the file', async () => {
    const body = multipart([
      { name: 'size', data: 'preview' },
      { name: 'type', data: 'auto' },
      { name: 'crop', data: 'false' },
      { name: 'image_file', filename: 'photo.jpg', contentType: 'image/jpeg', data: photo },
    ]);
    const response = await post('/v1.0/removebg', body, { Accept: 'application/json' });
    expect(response.statusCode, response.body.slice(0, 300)).toBe(200);
    expect(response.json().data.result_b64.length).toBeGreaterThan(1000);
  });
});

describe("remove.bg's CLI (remove-bg-cli)", () => {
  const cliFields = (overrides: Record<string, string> = {}): FormPart[] => [
    { name: 'image_file', filename: 'photo.jpg', contentType: 'image/jpeg', data: photo },
    ...Object.entries({ size: '', type: '', type_level: '', format: 'zip', roi: '', crop: '', crop_margin: '', scale: '', position: '', channels: '', add_shadow: '', semitransparency: '', bg_color: '', ...overrides }).map(
      ([name, data]) => ({ name, data }),
    ),
  ];

  it('sends every field, most empty, and format=zip: the archive holds color.jpg and alpha.png of one size', async () => {
    const response = await post('/v1.0/removebg', multipart(cliFields({ size: 'full' })), { 'User-Agent': 'remove-bg-cli-1.4.0' });
    expectRemoveBgHeaders(response, 640, 480);
    expect(response.headers['content-type']).toBe('application/zip');
    const files = unzipSync(new Uint8Array(response.rawPayload));
    expect(Object.keys(files).sort()).toEqual(['alpha.png', 'color.jpg']);
    const color = await imageSize(Buffer.from(files['color.jpg']));
    expect([color.format, color.width, color.height]).toEqual(['jpeg', 640, 480]);
    const { format, channels } = await sharp(Buffer.from(files['alpha.png'])).metadata();
    expect([format, channels]).toEqual(['png', 1]);
    const alpha = await sharp(Buffer.from(files['alpha.png'])).extractChannel(0).raw().toBuffer({ resolveWithObject: true });
    expect([alpha.info.width, alpha.info.height]).toEqual([640, 480]);
    // The mask: the ball's centre opaque, a corner transparent.
    expect(alpha.data[240 * 640 + 320]).toBeGreaterThan(240);
    expect(alpha.data[5 * 640 + 5]).toBeLessThan(16);
  });

  it('reads errors[0].code, title and detail when the key is wrong', async () => {
    const response = await post('/v1.0/removebg', multipart(cliFields()), { 'X-Api-Key': 'not-a-key' });
    expect(response.statusCode).toBe(403);
    expect(response.headers['content-type']).toMatch(/^application\/json/);
    const [error] = response.json().errors;
    expect(error).toMatchObject({ code: 'auth_failed', title: 'API Key invalid' });
    expect(typeof error.detail).toBe('string');
  });
});

describe('the Ruby gem remove_bg', () => {
  it('remove_from_url: urlencoded image_url and size=auto, Accept */*: the PNG itself with the metadata headers', async () => {
    const payload = new URLSearchParams({ image_url: `${base}/photo.jpg`, size: 'auto' }).toString();
    const response = await post('/v1.0/removebg', { payload, headers: { 'content-type': 'application/x-www-form-urlencoded' } }, { Accept: '*/*', 'User-Agent': 'remove-bg-ruby-1.4.1' });
    expectRemoveBgHeaders(response, 640, 480);
    expect(response.headers['content-type']).toBe('image/png');
    expect((await imageSize(response.rawPayload)).hasAlpha).toBe(true);
  });

  it('a URL that answers 404 is failed_image_download, with a title', async () => {
    const payload = new URLSearchParams({ image_url: `${base}/missing.jpg`, size: 'auto' }).toString();
    const response = await post('/v1.0/removebg', { payload, headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    expect(response.statusCode).toBe(400);
    expect(response.json().errors[0]).toMatchObject({ code: 'failed_image_download', title: expect.any(String) });
  });

  it('account_info: credits and api with exactly the keys the gem passes as keywords, and what is true of this token', async () => {
    await t.store.createAccount({ id: randomUUID(), email: `owner-${randomUUID()}@example.com`, passwordHash: 'x', createdAt: new Date().toISOString() });
    const response = await t.app.inject({ method: 'GET', url: '/v1.0/account', headers: { 'X-Api-Key': key, Accept: '*/*' } });
    expect(response.statusCode, response.body).toBe(200);
    const { attributes } = response.json().data;
    expect(Object.keys(attributes.credits).sort()).toEqual(['enterprise', 'payg', 'subscription', 'total']);
    expect(Object.keys(attributes.api).sort()).toEqual(['free_calls', 'sizes']);
    expect(attributes.api.free_calls).toBe(1000);
    expect(attributes.cutout.rate_limit_per_minute).toBe(1000);
    expect(attributes.cutout.removals_last_30_days).toBeGreaterThan(0);
  });
});

describe('the Python client removebg', () => {
  // _build_common_data() with the defaults of remove_background_from_img_file; crop_margin None is left out by requests.
  const common = {
    size: 'regular',
    type: 'auto',
    type_level: 'none',
    format: 'auto',
    roi: '0 0 100% 100%',
    crop: 'false',
    scale: 'original',
    position: 'original',
    channels: 'rgba',
    add_shadow: 'false',
    semitransparency: 'true',
  };

  it('remove_background_from_img_file: multipart, regular size (at most 0.25 MP), a PNG', async () => {
    const response = await post('/v1.0/removebg', multipart([{ name: 'image_file', filename: 'photo.jpg', data: photo }, ...Object.entries(common).map(([name, data]) => ({ name, data }))]));
    const size = await imageSize(response.rawPayload);
    expectRemoveBgHeaders(response, size.width!, size.height!);
    expect(size.format).toBe('png');
    expect(size.width! * size.height!).toBeLessThanOrEqual(250_000);
    expect(size.width! * size.height!).toBeGreaterThan(240_000);
  });

  it('remove_background_from_img_url: urlencoded, with a shadow and a colour by name', async () => {
    const payload = new URLSearchParams({ ...common, size: 'full', add_shadow: 'true', bg_color: 'skyblue', image_url: `${base}/photo.jpg` }).toString();
    const response = await post('/v1.0/removebg', { payload, headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    expectRemoveBgHeaders(response, 640, 480);
    expect(response.headers['content-type']).toBe('image/jpeg');
  });
});

describe("Photoroom's segment call", () => {
  it('multipart image_file with lower-case x-api-key: the image bytes, at full size by default', async () => {
    const body = multipart([
      { name: 'image_file', filename: 'photo.jpg', contentType: 'image/jpeg', data: photo },
      { name: 'format', data: 'webp' },
      { name: 'crop', data: 'true' },
    ]);
    const response = await t.app.inject({ method: 'POST', url: '/v1/segment', payload: body.payload, headers: { ...body.headers, 'x-api-key': key } });
    expect(response.statusCode, response.body.slice(0, 300)).toBe(200);
    expect(response.headers['content-type']).toBe('image/webp');
    const size = await imageSize(response.rawPayload);
    expect(Math.abs(size.width! - 288)).toBeLessThanOrEqual(16);
  });

  it("answers errors in Photoroom's shape", async () => {
    const body = multipart([{ name: 'format', data: 'png' }]);
    const response = await t.app.inject({ method: 'POST', url: '/v1/segment', payload: body.payload, headers: { ...body.headers, 'x-api-key': key } });
    expect(response.statusCode).toBe(400);
    expect(response.json()).toMatchObject({ status_code: 400, type: 'missing_source', detail: expect.any(String) });
  });
});
