import { unzipSync } from 'fflate';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ModelService } from '../src/model/model-service.js';
import { memoSegmenter } from '../scripts/eval/memo-segmenter.js';
import { multipartBody } from '../scripts/lib/multipart-body.js';
import { sharedSegmenter, startTestApp, type TestApp } from './helpers/app.js';
import { makeSubjectPhoto } from './helpers/images.js';

/**
 * The finishing steps that came with remove.bg's parameters, on the native API under the
 * same names: `format` auto and zip, `size`, `scale` and `position`, `add_shadow`. The real
 * model on the generated ball (640×480), run once (memo).
 */

let t: TestApp;
let auth: string;
let photo: Buffer;

const remove = (options: Record<string, unknown>) =>
  t.app.inject({ method: 'POST', url: '/api/v1/background/remove/base64', headers: { authorization: auth, accept: 'image/*' }, payload: { image_base64: photo.toString('base64'), ...options } });

beforeAll(async () => {
  t = await startTestApp({ rateLimit: 0 }, { model: ModelService.ofSegmenter(memoSegmenter(await sharedSegmenter())) });
  auth = await t.managedToken();
  photo = await (await makeSubjectPhoto(640, 480)).jpeg({ quality: 92 }).toBuffer();
});

afterAll(async () => {
  await t?.close();
});

describe('the native API', () => {
  it('format=auto: PNG with transparency, JPEG on an opaque colour', async () => {
    const transparent = await remove({ format: 'auto' });
    expect(transparent.statusCode, transparent.body.slice(0, 200)).toBe(200);
    expect(transparent.headers['content-type']).toBe('image/png');
    const onWhite = await remove({ format: 'auto', bg_color: 'fff' });
    expect(onWhite.headers['content-type']).toBe('image/jpeg');
  });

  it('format=zip: color.jpg and alpha.png, the mask the PNG answer\'s alpha', async () => {
    const [zip, png] = [await remove({ format: 'zip' }), await remove({})];
    expect(zip.headers['content-type']).toBe('application/zip');
    const files = unzipSync(new Uint8Array(zip.rawPayload));
    const alpha = await sharp(Buffer.from(files['alpha.png'])).extractChannel(0).raw().toBuffer();
    const expected = await sharp(png.rawPayload).extractChannel(3).raw().toBuffer();
    expect(Buffer.compare(alpha, expected)).toBe(0);
  });

  it('size: at most the megapixels of its name, the aspect ratio kept', async () => {
    const response = await remove({ size: 'preview' });
    const [w, h] = [Number(response.headers['x-width']), Number(response.headers['x-height'])];
    expect(w * h).toBeLessThanOrEqual(250_000);
    expect(Math.abs(w / h - 4 / 3)).toBeLessThan(0.01);
    expect((await remove({ size: 'full' })).headers['x-width']).toBe('640');
  });

  it('scale and position as form fields: the subject at 50 %, top left', async () => {
    const { body, contentType } = multipartBody([{ name: 'file', filename: 'a.jpg', data: photo }, { name: 'scale', data: '50%' }, { name: 'position', data: '0%' }]);
    const response = await t.app.inject({ method: 'POST', url: '/api/v1/background/remove/multipart', headers: { authorization: auth, accept: 'image/png', 'content-type': contentType }, payload: body });
    expect(response.statusCode, response.body.slice(0, 200)).toBe(200);
    const { data, info } = await sharp(response.rawPayload).raw().toBuffer({ resolveWithObject: true });
    const alphaAt = (x: number, y: number) => data[(y * info.width + x) * 4 + 3];
    expect(alphaAt(120, 120)).toBeGreaterThan(240);
    expect(alphaAt(320, 240)).toBeLessThan(16);
  });

  it('add_shadow: the cut-out gains alpha below the subject, nowhere above it', async () => {
    const [plain, shadowed] = [await remove({}), await remove({ add_shadow: true, shadow_opacity: 90 })];
    const alphaOf = async (png: Buffer) => sharp(png).extractChannel(3).raw().toBuffer();
    const [a, b] = await Promise.all([alphaOf(plain.rawPayload), alphaOf(shadowed.rawPayload)]);
    expect(b[(240 + 150) * 640 + 330]).toBeGreaterThan(a[(240 + 150) * 640 + 330] + 20);
    expect(b[(240 - 160) * 640 + 320]).toBe(a[(240 - 160) * 640 + 320]);
  });

  it('bad values are 400 invalid_request naming the field', async () => {
    for (const [field, value] of [['size', 'huge'], ['scale', '5%'], ['position', 'top'], ['shadow_type', 'soft'], ['format', 'gif']] as const) {
      const response = await remove({ [field]: value, add_shadow: true });
      expect(response.statusCode, field).toBe(400);
      expect(response.json().code).toBe('invalid_request');
      expect(response.json().detail).toContain(field);
    }
  });
});
