import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ModelService } from '../src/model/model-service.js';
import { orient } from '../src/pipeline/heic-decoder.js';
import { exifOrientation, hasHeifTransform } from '../src/pipeline/heif-orientation.js';
import { isHeif, sniffImageFormat } from '../src/pipeline/sniff-format.js';
import { memoSegmenter } from '../scripts/eval/memo-segmenter.js';
import { sharedSegmenter, startTestApp, type TestApp } from './helpers/app.js';
import { makePhoto, multipartUpload } from './helpers/images.js';

/**
 * HEIC/HEIF photos, as phones upload them, on every route: made here from the test's own
 * photo by Debian's heif-enc (libheif-examples, which .ci/run installs), decoded by Cutout
 * without any download, and cut as the same photo in another format is.
 */

let t: TestApp;
let key: string;
let dir: string;
let png: Buffer;
let heic: Buffer;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'cutout-heic-'));
  png = await makePhoto('png', 640, 480);
  await writeFile(join(dir, 'photo.png'), png);
  await promisify(execFile)('heif-enc', ['-q', '90', '-o', join(dir, 'photo.heic'), join(dir, 'photo.png')]);
  heic = await readFile(join(dir, 'photo.heic'));
  t = await startTestApp({ rateLimit: 0 }, { model: ModelService.ofSegmenter(memoSegmenter(await sharedSegmenter())) });
  key = (await t.tokens.createUserToken('heic')).tokenId;
}, 120_000);

afterAll(async () => {
  await t?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const maskOf = async (image: Buffer) => sharp(image).extractChannel(3).raw().toBuffer();

describe('HEIC', () => {
  it('is told from AVIF and from everything else by its bytes', async () => {
    expect(isHeif(heic)).toBe(true);
    expect(sniffImageFormat(heic)).toBeUndefined();
    expect(isHeif(await makePhoto('avif', 64, 48))).toBe(false);
    expect(isHeif(png)).toBe(false);
  });

  it('on the native API: a cut-out at the photo\'s size, the same cut as the PNG\'s', async () => {
    const authorization = await t.managedToken();
    const send = (bytes: Buffer) => {
      const { contentType, payload } = multipartUpload(bytes, 'photo.heic');
      return t.app.inject({ method: 'POST', url: '/api/v1/background/remove/multipart', headers: { authorization, 'content-type': contentType, accept: 'image/png' }, payload });
    };
    const [fromHeic, fromPng] = [await send(heic), await send(png)];
    expect(fromHeic.statusCode, fromHeic.body.slice(0, 300)).toBe(200);
    expect([fromHeic.headers['x-width'], fromHeic.headers['x-height']]).toEqual(['640', '480']);
    // Server-Timing's heic stage is the HEIC's decode; the PNG has none to speak of.
    const heicMs = (response: typeof fromHeic) => Number(/\bheic;dur=([\d.]+)/.exec(String(response.headers['server-timing']))?.[1]);
    expect(heicMs(fromHeic)).toBeGreaterThan(heicMs(fromPng) + 5);
    // HEIC is lossy: the masks agree on all but a thin seam along the edge.
    const [a, b] = await Promise.all([maskOf(fromHeic.rawPayload), maskOf(fromPng.rawPayload)]);
    let differ = 0;
    for (let i = 0; i < a.length; i++) if (Math.abs(a[i] - b[i]) > 64) differ++;
    expect(differ / a.length).toBeLessThan(0.01);
  });

  it('on the remove.bg route', async () => {
    const response = await t.app.inject({
      method: 'POST',
      url: '/v1.0/removebg',
      headers: { 'x-api-key': key, 'content-type': 'application/json' },
      payload: { image_file_b64: heic.toString('base64'), size: 'full', format: 'png' },
    });
    expect(response.statusCode, response.body.slice(0, 300)).toBe(200);
    expect(response.headers['x-width']).toBe('640');
  });

  it('a truncated HEIC is 422 image_decode_failed; one over the pixel limit 422 too_many_pixels', async () => {
    const authorization = await t.managedToken();
    const truncated = await t.app.inject({ method: 'POST', url: '/api/v1/background/remove/base64', headers: { authorization }, payload: { image_base64: heic.subarray(0, heic.length >> 1).toString('base64') } });
    expect(truncated.statusCode, truncated.body).toBe(422);
    expect(truncated.json().code).toBe('image_decode_failed');
    const small = await startTestApp({ maxPixels: 100_000 }, { model: ModelService.ofSegmenter(await sharedSegmenter()) });
    try {
      const tooLarge = await small.app.inject({ method: 'POST', url: '/api/v1/background/remove/base64', headers: { authorization: await small.managedToken() }, payload: { image_base64: heic.toString('base64') } });
      expect(tooLarge.statusCode, tooLarge.body).toBe(422);
      expect(tooLarge.json().code).toBe('too_many_pixels');
    } finally {
      await small.close();
    }
  });
});

/**
 * A photo stored on its side and turned upright by its orientation (test/fixtures/heic, made by
 * scripts/make-heic-fixtures.ts): the JPEG by its EXIF Orientation 6; one HEIC by that EXIF
 * Orientation alone (as heif-enc before 1.16 writes them); one by HEIF's irot besides the same
 * EXIF Orientation (as phones write them), which must turn it once, not twice.
 */
describe('HEIC orientation', () => {
  const fixture = (name: string) => readFile(new URL(`./fixtures/heic/${name}`, import.meta.url));
  const cut = async (bytes: Buffer) => {
    const { contentType, payload } = multipartUpload(bytes, 'photo');
    const response = await t.app.inject({ method: 'POST', url: '/api/v1/background/remove/multipart', headers: { authorization: await t.managedToken(), 'content-type': contentType, accept: 'image/png' }, payload });
    expect(response.statusCode, response.body.slice(0, 300)).toBe(200);
    return response.rawPayload;
  };
  /** Mean absolute difference of two RGBA cut-outs of one size, over every channel. */
  const meanDifference = async (a: Buffer, b: Buffer) => {
    const [x, y] = await Promise.all([sharp(a).raw().toBuffer(), sharp(b).raw().toBuffer()]);
    expect(x.length).toBe(y.length);
    let sum = 0;
    for (let i = 0; i < x.length; i++) sum += Math.abs(x[i] - y[i]);
    return sum / x.length;
  };

  it('tells which files turn by HEIF transforms and reads their EXIF Orientation', async () => {
    const [exifOnly, withIrot, jpeg] = await Promise.all([fixture('orientation-6-exif.heic'), fixture('orientation-6-irot.heic'), fixture('orientation-6.jpg')]);
    expect([hasHeifTransform(exifOnly), hasHeifTransform(withIrot), hasHeifTransform(heic)]).toEqual([false, true, false]);
    const { exif } = await sharp(exifOnly).metadata();
    expect(exifOrientation(exif!)).toBe(6);
    expect(exifOrientation((await sharp(jpeg).metadata()).exif!)).toBe(6);
    expect(exifOrientation(Buffer.from('no TIFF header in here at all'))).toBe(1);
  });

  it('turns decoded pixels by each EXIF Orientation as sharp turns a JPEG by it', async () => {
    const [width, height] = [5, 3];
    const data = new Uint8Array(width * height * 4).map((_, i) => i);
    for (let orientation = 1; orientation <= 8; orientation++) {
      const tagged = await sharp(data, { raw: { width, height, channels: 4 } }).withMetadata({ orientation }).tiff({ compression: 'none' }).toBuffer();
      const upright = await sharp(tagged).autoOrient().raw().toBuffer();
      const turned = await orient({ data, width, height, channels: 4 }, orientation);
      expect(Buffer.from(turned.data), `orientation ${orientation}`).toEqual(upright);
    }
  });

  it('lands upright as the JPEG does, whether the EXIF Orientation or HEIF\'s irot turns it', async () => {
    const fromJpeg = await cut(await fixture('orientation-6.jpg'));
    expect(await sharp(fromJpeg).metadata()).toMatchObject({ width: 320, height: 240 });
    for (const name of ['orientation-6-exif.heic', 'orientation-6-irot.heic']) {
      const fromHeic = await cut(await fixture(name));
      expect(await sharp(fromHeic).metadata(), name).toMatchObject({ width: 320, height: 240 });
      // The same picture the same way up: the ball's highlight is at its upper left, so a
      // photo turned twice (upside down) differs by far more than the two codecs' losses.
      expect(await meanDifference(fromHeic, fromJpeg), name).toBeLessThan(4);
    }
  });
});
