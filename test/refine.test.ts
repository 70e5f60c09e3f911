import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scaleMask } from '../src/pipeline/stretch-alpha.js';
import { decodeForModel, decodeImage } from '../src/pipeline/decode.js';
import { computeRefinedCutout, DEFAULT_REFINE_SETTINGS } from '../src/pipeline/refine/refine-cutout.js';
import { sharedSegmenter, startTestApp, type TestApp } from './helpers/app.js';
import { makeSubjectPhoto, multipartUpload } from './helpers/images.js';

let t: TestApp;
let auth: string;
let photo: Buffer;
/** What the pipeline's stages give for the photo, computed here without the HTTP layer. */
let rawAlpha: Uint8Array;
let refinedAlpha: Uint8Array;
let refinedColour: Uint8Array;

beforeAll(async () => {
  t = await startTestApp();
  auth = await t.managedToken();
  // A soft-edged ball, so that the model's mask has partial pixels to refine.
  photo = await (await makeSubjectPhoto(640, 480)).blur(1.5).jpeg({ quality: 92 }).toBuffer();
  const segmenter = await sharedSegmenter();
  const modelInput = await decodeForModel(photo, { maxPixels: 1e9, size: segmenter.size });
  const [mask] = await segmenter.segment([modelInput]);
  const image = await decodeImage(photo, { maxPixels: 1e9 });
  rawAlpha = (await scaleMask(mask, image.width, image.height)).data;
  const colour = { ...image, data: Uint8Array.from(image.data) };
  refinedAlpha = computeRefinedCutout({ image: colour, modelInput, mask }, DEFAULT_REFINE_SETTINGS).data;
  refinedColour = colour.data;
});

afterAll(async () => {
  await t?.close();
});

/** The answer's PNG as RGBA, split into colour (for visible pixels) and alpha. */
async function decodeAnswer(response: { statusCode: number; json: () => any }): Promise<{ alpha: Uint8Array; rgba: Uint8Array }> {
  expect(response.statusCode, JSON.stringify(response.json())).toBe(200);
  const { data, info } = await sharp(Buffer.from(response.json().image_base64, 'base64')).raw().toBuffer({ resolveWithObject: true });
  expect([info.width, info.height, info.channels]).toEqual([640, 480, 4]);
  const alpha = new Uint8Array(info.width * info.height);
  for (let i = 0; i < alpha.length; i++) alpha[i] = data[4 * i + 3];
  return { alpha, rgba: data };
}

/** Removed pixels are written black (encode.ts): by sharp on the raw path, by the refine stage itself when refined. */
function expectInvisibleBlack({ alpha, rgba }: { alpha: Uint8Array; rgba: Uint8Array }): void {
  let invisible = 0;
  let coloured = 0;
  for (let i = 0; i < alpha.length; i++) {
    if (alpha[i] !== 0) continue;
    invisible++;
    if (rgba[4 * i] || rgba[4 * i + 1] || rgba[4 * i + 2]) coloured++;
  }
  expect(invisible).toBeGreaterThan(alpha.length / 10);
  expect(coloured).toBe(0);
}

const base64 = (body: Record<string, unknown>) =>
  t.app.inject({ method: 'POST', url: '/api/v1/background/remove/base64', headers: { authorization: auth }, payload: { image_base64: photo.toString('base64'), ...body } });

describe('refine per request', () => {
  it('the refined alpha differs from the raw one along the edge: the test can tell them apart', () => {
    let differ = 0;
    for (let i = 0; i < rawAlpha.length; i++) if (rawAlpha[i] !== refinedAlpha[i]) differ++;
    expect(differ).toBeGreaterThan(100);
  });

  it('by default answers the refined alpha, with the estimated colours where it is partial, and times the refine stage', async () => {
    const response = await base64({});
    const { alpha, rgba } = await decodeAnswer(response);
    expect(Buffer.from(alpha).equals(Buffer.from(refinedAlpha))).toBe(true);
    for (let i = 0; i < alpha.length; i++) {
      if (alpha[i] === 0 || alpha[i] === 255) continue;
      expect([...rgba.subarray(4 * i, 4 * i + 3)]).toEqual([...refinedColour.subarray(3 * i, 3 * i + 3)]);
    }
    expectInvisibleBlack({ alpha, rgba });
    const timing = String(response.headers['server-timing']);
    expect(timing).toMatch(/\brefine;dur=\d+(\.\d+)?/);
    expect(timing).toMatch(/\bpostprocess;dur=0\.0\b/);
  });

  it('refine: false answers the model\'s mask stretched, as it was', async () => {
    const response = await base64({ refine: false });
    const answer = await decodeAnswer(response);
    expect(Buffer.from(answer.alpha).equals(Buffer.from(rawAlpha))).toBe(true);
    expectInvisibleBlack(answer);
    expect(String(response.headers['server-timing'])).toMatch(/\brefine;dur=0\.0\b/);
  });

  it('refine must be a boolean in JSON', async () => {
    const response = await base64({ refine: 'no' });
    expect(response.statusCode).toBe(400);
  });

  /** The photo uploaded with a `refine` form field of `value`, before or after the file part. */
  const uploadWithRefineField = async (value: string, fieldFirst: boolean) => {
    const form = new FormData();
    if (fieldFirst) form.append('refine', value);
    form.append('file', new Blob([new Uint8Array(photo)], { type: 'image/jpeg' }), 'photo.jpg');
    if (!fieldFirst) form.append('refine', value);
    const request = new Request('http://cutout.invalid/', { method: 'POST', body: form });
    return t.app.inject({
      method: 'POST',
      url: '/api/v1/background/remove/multipart',
      headers: { authorization: auth, 'content-type': request.headers.get('content-type')! },
      payload: Buffer.from(await request.arrayBuffer()),
    });
  };

  it('multipart: a form field refine=false, before or after the file, gives the raw alpha', async () => {
    for (const fieldFirst of [true, false]) {
      const response = await uploadWithRefineField(fieldFirst ? 'false' : 'FALSE', fieldFirst);
      const { alpha } = await decodeAnswer(response);
      expect(Buffer.from(alpha).equals(Buffer.from(rawAlpha))).toBe(true);
    }
  });

  it('multipart: without the field the alpha is refined; a field that is not true or false is a 400', async () => {
    const { contentType, payload } = multipartUpload(photo);
    const plain = await t.app.inject({ method: 'POST', url: '/api/v1/background/remove/multipart', headers: { authorization: auth, 'content-type': contentType }, payload });
    expect(Buffer.from((await decodeAnswer(plain)).alpha).equals(Buffer.from(refinedAlpha))).toBe(true);

    const response = await uploadWithRefineField('maybe', true);
    expect(response.statusCode).toBe(400);
    expect(response.json().detail).toMatch(/refine/);
  });
});

describe('CUTOUT_REFINE=false', () => {
  let off: TestApp;
  beforeAll(async () => {
    off = await startTestApp({ refine: false });
  });
  afterAll(async () => {
    await off?.close();
  });

  it('makes raw the default, and refine: true still refines', async () => {
    const token = await off.managedToken();
    const post = (body: Record<string, unknown>) =>
      off.app.inject({ method: 'POST', url: '/api/v1/background/remove/base64', headers: { authorization: token }, payload: { image_base64: photo.toString('base64'), ...body } });
    expect(Buffer.from((await decodeAnswer(await post({}))).alpha).equals(Buffer.from(rawAlpha))).toBe(true);
    expect(Buffer.from((await decodeAnswer(await post({ refine: true }))).alpha).equals(Buffer.from(refinedAlpha))).toBe(true);
  });
});
