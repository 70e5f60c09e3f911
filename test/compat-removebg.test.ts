import sharp from 'sharp';
import { REMOVEBG_ERRORS } from '../src/compat/removebg-errors.js';
import { REMOVEBG_PARAMETERS } from '../src/compat/removebg-request.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ModelService } from '../src/model/model-service.js';
import { memoSegmenter } from '../scripts/eval/memo-segmenter.js';
import { multipartBody, type FormPart } from '../scripts/lib/multipart-body.js';
import { sharedSegmenter, startTestApp, type TestApp } from './helpers/app.js';
import { readDoc, tableRows } from './helpers/doc-tables.js';
import { makeSubjectPhoto } from './helpers/images.js';

/**
 * The remove.bg-compatible route's own rules: the key (a Token ID, with the native
 * revocation, expiry and rate limit), the sources, remove.bg's error shape for every kind of
 * error, the finishing steps it adds, and that it cuts exactly as the native API does.
 */

let t: TestApp;
let key: string;
let photo: Buffer;
let now = new Date();

type Injected = Awaited<ReturnType<TestApp['app']['inject']>>;

const removebg = (fields: Record<string, unknown>, headers: Record<string, string> = {}) =>
  t.app.inject({ method: 'POST', url: '/v1.0/removebg', payload: JSON.stringify(fields), headers: { 'x-api-key': key, 'content-type': 'application/json', ...headers } });

const upload = (parts: FormPart[], headers: Record<string, string> = {}) => {
  const { body, contentType } = multipartBody(parts);
  return t.app.inject({ method: 'POST', url: '/v1.0/removebg', payload: body, headers: { 'x-api-key': key, 'content-type': contentType, ...headers } });
};

/** remove.bg's error body, with exactly its three fields, and no trace of the native shape. */
function errorOf(response: Injected, status: number, code: string) {
  expect(response.statusCode, response.body).toBe(status);
  expect(response.headers['content-type']).toMatch(/^application\/json/);
  const body = response.json();
  expect(Object.keys(body)).toEqual(['errors']);
  expect(body.errors).toHaveLength(1);
  expect(Object.keys(body.errors[0]).sort()).toEqual(['code', 'detail', 'title']);
  expect(body.errors[0].code).toBe(code);
  return body.errors[0] as { title: string; code: string; detail: string };
}

beforeAll(async () => {
  t = await startTestApp({ rateLimit: 1000 }, { now: () => now, model: ModelService.ofSegmenter(memoSegmenter(await sharedSegmenter())) });
  key = (await t.tokens.createUserToken('compat-rules')).tokenId;
  photo = await (await makeSubjectPhoto(640, 480)).jpeg({ quality: 92 }).toBuffer();
});

afterAll(async () => {
  await t?.close();
});

describe('the key', () => {
  it('takes X-Api-Key in any letter case; no key or a bad one is 403 auth_failed', async () => {
    const b64 = photo.toString('base64');
    expect((await removebg({ image_file_b64: b64 }, { 'X-API-KEY': key })).statusCode).toBe(200);
    errorOf(await t.app.inject({ method: 'POST', url: '/v1.0/removebg', payload: '{}', headers: { 'content-type': 'application/json' } }), 403, 'auth_failed');
    errorOf(await removebg({ image_file_b64: b64 }, { 'x-api-key': 'cut_user_' + 'A'.repeat(43) }), 403, 'auth_failed');
    // A managed token is not a key here.
    errorOf(await removebg({ image_file_b64: b64 }, { 'x-api-key': await t.managedToken() }), 403, 'auth_failed');
  });

  it('is refused once revoked or expired, as the native API refuses it', async () => {
    const { tokenId } = await t.tokens.createUserToken('short-lived', new Date(now.getTime() + 60_000));
    const account = () => t.app.inject({ method: 'GET', url: '/v1.0/account', headers: { 'x-api-key': tokenId } });
    expect((await account()).statusCode).toBe(200);
    now = new Date(now.getTime() + 120_000);
    expect(errorOf(await account(), 403, 'auth_failed').detail).toMatch(/expired/);
    const revoked = (await t.tokens.createUserToken('revoked')).tokenId;
    await t.tokens.revokeUserToken(revoked);
    errorOf(await t.app.inject({ method: 'GET', url: '/v1.0/account', headers: { 'x-api-key': revoked } }), 403, 'auth_failed');
  });
});

describe('the sources', () => {
  it('none is missing_source; empty strings are unset', async () => {
    errorOf(await removebg({ size: 'full', image_url: '', image_file_b64: '' }), 400, 'missing_source');
    errorOf(await upload([{ name: 'size', data: '' }, { name: 'image_file', filename: 'empty.jpg', data: '' }]), 400, 'missing_source');
  });

  it('several is multiple_sources; several backgrounds is multiple_bg_sources', async () => {
    errorOf(await removebg({ image_url: 'https://example.com/a.jpg', image_file_b64: 'AAAA' }), 400, 'multiple_sources');
    errorOf(await upload([{ name: 'image_file', filename: 'a.jpg', data: photo }, { name: 'image_url', data: 'https://example.com/a.jpg' }]), 400, 'multiple_sources');
    errorOf(await removebg({ image_file_b64: 'AAAA', bg_color: 'red', bg_image_url: 'https://example.com/b.jpg' }), 400, 'multiple_bg_sources');
  });

  it('a bg_image_file upload is the background', async () => {
    const green = await sharp({ create: { width: 50, height: 40, channels: 3, background: { r: 0, g: 200, b: 0 } } }).png().toBuffer();
    const response = await upload([
      { name: 'image_file', filename: 'a.jpg', data: photo },
      { name: 'bg_image_file', filename: 'bg.png', data: green },
      { name: 'size', data: 'full' },
    ]);
    expect(response.statusCode, response.body.slice(0, 300)).toBe(200);
    expect(response.headers['content-type']).toBe('image/jpeg');
    const { data } = await sharp(response.rawPayload).raw().toBuffer({ resolveWithObject: true });
    expect([data[0], data[1], data[2]].map((v) => Math.round(v / 20))).toEqual([0, 10, 0]);
  });
});

describe('errors in remove.bg\'s shape, for every kind', () => {
  it.each([
    [{ size: 'huge' }, 'invalid_size'],
    [{ format: 'gif' }, 'invalid_format'],
    [{ channels: 'rgb' }, 'invalid_channels'],
    [{ roi: '0 0 100%' }, 'invalid_roi'],
    [{ roi: '50% 0 10% 100%' }, 'roi_region_empty'],
    [{ crop: true, crop_margin: '60%' }, 'invalid_crop_margin'],
    [{ scale: '5%' }, 'invalid_scale'],
    [{ position: 'top' }, 'invalid_position'],
    [{ bg_color: 'notacolour' }, 'invalid_bg_color'],
  ])('%j is %s', async (fields, code) => {
    errorOf(await removebg({ image_file_b64: photo.toString('base64'), ...fields }), 400, code);
  });

  it('bytes that are not an image, a truncated image, an roi outside the photo', async () => {
    errorOf(await removebg({ image_file_b64: Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"/>  ').toString('base64') }), 400, 'invalid_file_type');
    errorOf(await removebg({ image_file_b64: photo.subarray(0, 2000).toString('base64') }), 400, 'failed_to_read_image');
    errorOf(await removebg({ image_file_b64: '%%%%' }), 400, 'failed_to_read_image');
    errorOf(await removebg({ image_file_b64: photo.toString('base64'), roi: '700px 0 900px 100px' }), 400, 'roi_region_empty');
    errorOf(await removebg({ image_url: 'http://127.0.0.1/photo.jpg' }), 400, 'failed_image_download');
  });

  it('malformed JSON and an unknown content type are invalid_request, not problem+json', async () => {
    errorOf(await t.app.inject({ method: 'POST', url: '/v1.0/removebg', payload: '{"image_url":', headers: { 'x-api-key': key, 'content-type': 'application/json' } }), 400, 'invalid_request');
    errorOf(await t.app.inject({ method: 'POST', url: '/v1.0/removebg', payload: 'x', headers: { 'x-api-key': key, 'content-type': 'application/octet-stream' } }), 400, 'invalid_request');
  });

  it('too many pixels is resolution_too_high', async () => {
    const small = await startTestApp({ maxPixels: 10_000 }, { model: ModelService.ofSegmenter(await sharedSegmenter()) });
    try {
      const smallKey = (await small.tokens.createUserToken('k')).tokenId;
      const response = await small.app.inject({ method: 'POST', url: '/v1.0/removebg', payload: { image_file_b64: photo.toString('base64') }, headers: { 'x-api-key': smallKey } });
      errorOf(response, 400, 'resolution_too_high');
    } finally {
      await small.close();
    }
  });

  it('the rate limit: 429 rate_limit_exceeded with Retry-After and the X-RateLimit headers', async () => {
    const limited = await startTestApp({ rateLimit: 1 }, { model: ModelService.ofSegmenter(await sharedSegmenter()) });
    try {
      const limitedKey = (await limited.tokens.createUserToken('k')).tokenId;
      const call = () => limited.app.inject({ method: 'POST', url: '/v1.0/removebg', payload: { size: 'full' }, headers: { 'x-api-key': limitedKey } });
      errorOf(await call(), 400, 'missing_source');
      const refused = await call();
      const error = errorOf(refused, 429, 'rate_limit_exceeded');
      expect(error.title).toBe('Rate limit exceeded');
      expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
      expect(refused.headers['x-ratelimit-limit']).toBe('1');
      expect(refused.headers['x-ratelimit-remaining']).toBe('0');
    } finally {
      await limited.close();
    }
  });

  it('CUTOUT_COMPAT_API=false: the routes are not there', async () => {
    const off = await startTestApp({ compatApi: false }, { model: ModelService.ofSegmenter(await sharedSegmenter()) });
    try {
      const response = await off.app.inject({ method: 'POST', url: '/v1.0/removebg', payload: {}, headers: { 'x-api-key': key } });
      expect(response.statusCode).toBe(404);
      expect(response.json().code).toBe('not_found');
    } finally {
      await off.close();
    }
  });
});

describe('the cut', () => {
  it('is the native API\'s for the same photo and options: the same mask, byte for byte', async () => {
    const native = await t.app.inject({
      method: 'POST',
      url: '/api/v1/background/remove/base64',
      headers: { authorization: await t.managedToken(), accept: 'image/png' },
      payload: { image_base64: photo.toString('base64'), channels: 'alpha', roi: '10% 0% 90% 100%' },
    });
    const compat = await removebg({ image_file_b64: photo.toString('base64'), size: 'full', format: 'png', channels: 'alpha', roi: '10% 0 90% 100%' });
    expect(compat.statusCode, compat.body.slice(0, 200)).toBe(200);
    const maskOf = async (png: Buffer) => sharp(png).extractChannel(0).raw().toBuffer();
    const [a, b] = await Promise.all([maskOf(native.rawPayload), maskOf(compat.rawPayload)]);
    expect(a.length).toBe(640 * 480);
    expect(Buffer.compare(a, b)).toBe(0);
    expect(compat.headers['x-foreground-left']).toBe(native.headers['x-foreground-left']);
  });

  it('scale and position: the subject at half the canvas, bottom right', async () => {
    const response = await removebg({ image_file_b64: photo.toString('base64'), size: 'full', format: 'png', scale: '50%', position: '100% 100%' });
    const { data, info } = await sharp(response.rawPayload).raw().toBuffer({ resolveWithObject: true });
    expect([info.width, info.height]).toEqual([640, 480]);
    const alphaAt = (x: number, y: number) => data[(y * info.width + x) * 4 + 3];
    // The ball, 288 px across, now fits in 240 × 240, at the bottom right.
    expect(alphaAt(640 - 120, 480 - 120)).toBeGreaterThan(240);
    expect(alphaAt(320, 240)).toBeLessThan(16);
  });

  it('add_shadow: a shadow below the subject, where the plain cut-out is transparent', async () => {
    const plain = await removebg({ image_file_b64: photo.toString('base64'), size: 'full', format: 'png' });
    const shadowed = await removebg({ image_file_b64: photo.toString('base64'), size: 'full', format: 'png', add_shadow: true, shadow_opacity: 80 });
    const alphaOf = async (png: Buffer) => (await sharp(png).raw().toBuffer({ resolveWithObject: true })).data;
    const [a, b] = await Promise.all([alphaOf(plain.rawPayload), alphaOf(shadowed.rawPayload)]);
    // Just below the ball's bottom (240 + 144), in the middle.
    const at = ((240 + 150) * 640 + 330) * 4 + 3;
    expect(a[at]).toBeLessThan(16);
    expect(b[at]).toBeGreaterThan(a[at] + 20);
  });

  it('crop_margin with two values: top and bottom, left and right', async () => {
    const cropped = await removebg({ image_file_b64: photo.toString('base64'), size: 'full', crop: 'true', crop_margin: '0 20px' });
    const wide = await removebg({ image_file_b64: photo.toString('base64'), size: 'full', crop: 1 });
    expect(Number(cropped.headers['x-width'])).toBe(Number(wide.headers['x-width']) + 40);
    expect(Number(cropped.headers['x-height'])).toBe(Number(wide.headers['x-height']));
  });
});

describe('docs/clients.md', () => {
  const rows = (name: string) => tableRows(name, readDoc('docs/clients.md'));

  it('lists every remove.bg error code with its status, and no other', () => {
    expect(rows('compat-errors').map(([code, status]) => [code.replaceAll('`', ''), Number(status)])).toEqual(Object.entries(REMOVEBG_ERRORS).map(([code, e]) => [code, e.status]));
  });

  it('lists every remove.bg parameter Cutout reads, and no other', () => {
    const documented = rows('compat-parameters').flatMap(([names]) => names.split(',').map((name) => name.replaceAll('`', '').trim()));
    expect(documented.sort()).toEqual([...REMOVEBG_PARAMETERS].sort());
  });
});
