import { readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { multipartBody, type FormPart } from '../scripts/lib/multipart-body.js';
import { ModelService } from '../src/model/model-service.js';
import type { Segmenter } from '../src/model/segmenter.js';
import { headerSize } from '../src/pipeline/decode.js';
import { startTestApp, type TestApp } from './helpers/app.js';
import { fakeSegmenter, uniformMask } from './helpers/fake-segmenter.js';
import { makePhoto } from './helpers/images.js';

/**
 * The memory budget (CUTOUT_MEMORY_BUDGET) through HTTP: what could never fit is refused at
 * once, what does not fit now waits, and every reservation comes back however the request
 * ends; the checks that need no pixels refuse before the model; the compatible prefixes'
 * unknown routes and the background's errors in their own words.
 */

const MB = 2 ** 20;
type Injected = Awaited<ReturnType<TestApp['app']['inject']>>;

let small: Buffer;
let large: Buffer;
beforeAll(async () => {
  small = await makePhoto('jpeg', 640, 480);
  large = await sharp({ create: { width: 4000, height: 3000, channels: 3, background: '#808080' } }).jpeg().toBuffer();
});

const base64 = (t: TestApp, token: string, image: Buffer, more: Record<string, unknown> = {}) =>
  t.app.inject({ method: 'POST', url: '/api/v1/background/remove/base64', headers: { authorization: token }, payload: { image_base64: image.toString('base64'), ...more } });

const removebg = (t: TestApp, key: string, fields: Record<string, unknown>) =>
  t.app.inject({ method: 'POST', url: '/v1.0/removebg', payload: JSON.stringify(fields), headers: { 'x-api-key': key, 'content-type': 'application/json' } });

const upload = (t: TestApp, key: string, parts: FormPart[]) => {
  const { body, contentType } = multipartBody(parts);
  return t.app.inject({ method: 'POST', url: '/v1.0/removebg', payload: body, headers: { 'x-api-key': key, 'content-type': contentType } });
};

const removeBgError = (response: Injected, status: number, code: string) => {
  expect(response.statusCode, response.body).toBe(status);
  const body = response.json();
  expect(Object.keys(body)).toEqual(['errors']);
  expect(body.errors[0].code).toBe(code);
  return body.errors[0] as { detail: string };
};

async function until(condition: () => boolean, what: string): Promise<void> {
  for (let waited = 0; !condition(); waited += 20) {
    if (waited > 5000) throw new Error(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('the memory budget', () => {
  it('refuses at once, 503 over_memory_budget with Retry-After in each wire\'s shape, a request whose estimate alone is over it; the model never runs', async () => {
    const segmenter = fakeSegmenter();
    const t = await startTestApp({ memoryBudget: 64 * MB, rateLimit: 0 }, { model: ModelService.ofSegmenter(segmenter) });
    try {
      const token = await t.managedToken();
      const native = await base64(t, token, large);
      expect(native.statusCode, native.body).toBe(503);
      expect(native.json().code).toBe('over_memory_budget');
      expect(native.headers['content-type']).toMatch(/problem\+json/);
      expect(Number(native.headers['retry-after'])).toBeGreaterThan(0);

      const { tokenId } = await t.tokens.createUserToken('compat');
      const compat = await removebg(t, tokenId, { image_file_b64: large.toString('base64'), size: 'full' });
      removeBgError(compat, 503, 'service_unavailable');
      expect(Number(compat.headers['retry-after'])).toBeGreaterThan(0);
      expect(segmenter.runs).toBe(0);

      // A smaller answer of the same photo fits.
      expect((await base64(t, token, large, { max_width: 400 })).statusCode).toBe(200);
      expect((await base64(t, token, small)).statusCode).toBe(200);
      expect(t.app.removals.memory.reserved).toBe(0);
    } finally {
      await t.close();
    }
  });

  it('makes a request that does not fit now wait for the memory, then answers it', async () => {
    const t = await startTestApp({ memoryBudget: 16 * MB, rateLimit: 0 }, { model: ModelService.ofSegmenter(fakeSegmenter(300)) });
    try {
      const token = await t.managedToken();
      let mostWaiting = 0;
      const watch = setInterval(() => (mostWaiting = Math.max(mostWaiting, t.app.removals.memory.waiting)), 5);
      const answers = await Promise.all([base64(t, token, small), base64(t, token, small), base64(t, token, small)]);
      clearInterval(watch);
      expect(answers.map((a) => a.statusCode)).toEqual([200, 200, 200]);
      expect(mostWaiting).toBeGreaterThanOrEqual(1);
      // Server-Timing's first stage is the wait for memory (then an HEIC's decode, none here).
      const memoryWaits = answers.map((a) => Number(/^memory;dur=([\d.]+), heic;dur=0\.\d, /.exec(String(a.headers['server-timing']))?.[1]));
      expect(Math.max(...memoryWaits)).toBeGreaterThan(250);
      expect(t.app.removals.memory.reserved).toBe(0);
    } finally {
      await t.close();
    }
  });

  it('answers 503 queue_full with Retry-After, in each wire\'s shape, a request that could not get its memory in time to finish within its deadline, instead of 504 at the deadline', async () => {
    // A removal's work here takes about 2 s; the deadline is 3 s. The request waiting behind
    // one that holds the memory would get it after about 2 s and need 2 s more.
    const segmenter = fakeSegmenter(2000);
    const t = await startTestApp({ memoryBudget: 16 * MB, rateLimit: 0, requestTimeoutMs: 3000 }, { model: ModelService.ofSegmenter(segmenter) });
    try {
      const token = await t.managedToken();
      const { tokenId } = await t.tokens.createUserToken('compat');
      expect((await base64(t, token, small)).statusCode).toBe(200); // the pace is learned
      const holding = base64(t, token, small);
      await until(() => t.app.removals.memory.reserved > 0, 'the first request holds the memory');
      const started = performance.now();
      const [native, compat] = await Promise.all([base64(t, token, small), removebg(t, tokenId, { image_file_b64: small.toString('base64') })]);
      const waited = performance.now() - started;
      expect(native.statusCode, native.body).toBe(503);
      expect(native.json().code).toBe('queue_full');
      expect(native.json().detail).toMatch(/not free in time .* deadline/);
      expect(Number(native.headers['retry-after'])).toBeGreaterThanOrEqual(2);
      removeBgError(compat, 503, 'service_unavailable');
      expect(Number(compat.headers['retry-after'])).toBeGreaterThanOrEqual(2);
      expect(waited).toBeLessThan(2000);
      expect((await holding).statusCode).toBe(200);
      expect(segmenter.runs).toBe(2);
      await until(() => t.app.removals.memory.reserved === 0 && t.app.removals.memory.waiting === 0, 'every reservation is released');
    } finally {
      await t.close();
    }
  });

  it('gives every reservation back after a burst of successes, failures and clients that go away', async () => {
    const t = await startTestApp({ memoryBudget: 40 * MB, rateLimit: 0 }, { model: ModelService.ofSegmenter(fakeSegmenter(150)) });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    try {
      const token = await t.managedToken();
      const url = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}/api/v1/background/remove/base64`;
      const send = (image: Buffer, signal?: AbortSignal) =>
        fetch(url, { method: 'POST', headers: { authorization: token, 'content-type': 'application/json' }, body: JSON.stringify({ image_base64: image.toString('base64') }), signal }).then(
          async (response) => (await response.arrayBuffer(), response.status),
          () => 'aborted' as const,
        );
      // Its header reads, so it reserves; its pixels do not decode.
      const truncated = small.subarray(0, Math.floor(small.length / 2));
      const aborts = Array.from({ length: 4 }, () => new AbortController());
      const burst = [
        ...Array.from({ length: 4 }, () => send(small)),
        ...Array.from({ length: 3 }, () => send(truncated)),
        ...aborts.map((controller) => send(small, controller.signal)),
      ];
      await until(() => t.app.removals.memory.reserved > 0, 'the burst holds memory');
      setTimeout(() => aborts.forEach((controller) => controller.abort()), 100);
      const statuses = await Promise.all(burst);
      expect(statuses.slice(0, 4)).toEqual([200, 200, 200, 200]);
      expect(statuses.slice(4, 7)).toEqual([422, 422, 422]);
      expect(statuses.slice(7)).toEqual(['aborted', 'aborted', 'aborted', 'aborted']);
      await until(() => t.app.removals.memory.reserved === 0 && t.app.removals.memory.waiting === 0, 'every reservation is released');
    } finally {
      await t.close();
    }
  });
});

describe('a background\'s decode in the budget', () => {
  it('counts an HEIC background whole: an uploaded one\'s from its header, before the model; a URL\'s once it is fetched', async () => {
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const held: Segmenter = { size: 1024, segment: async (pictures) => (await gate, pictures.map(() => uniformMask(1024, 255))), close: async () => {} };
    const t = await startTestApp({ rateLimit: 0, urlAllowPrivate: true }, { model: ModelService.ofSegmenter(held) });
    const heic = await readFile(new URL('./fixtures/heic/orientation-6-exif.heic', import.meta.url));
    const size = (await headerSize(heic, 50e6))!;
    expect(size.heic).toBe(true);
    const jpeg = await makePhoto('jpeg', size.width, size.height);
    const server = createServer((request, response) => response.end(request.url === '/bg.heic' ? heic : jpeg));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const { tokenId } = await t.tokens.createUserToken('compat');
      const token = await t.managedToken();
      const reserved = () => t.app.removals.memory.reserved;
      /** Starts a request held at the model and answers what it added to the budget once it reaches `expected` (or, without one, once it added anything). */
      const added = async (send: () => Promise<Injected>, expected?: number) => {
        const before = reserved();
        answers.push(send());
        await until(() => (expected === undefined ? reserved() > before : reserved() - before === expected), `the request reserves ${expected ?? 'its memory'}`);
        return reserved() - before;
      };
      const answers: Promise<Injected>[] = [];
      const file = (background: Buffer) => () => upload(t, tokenId, [{ name: 'image_file', filename: 'a.jpg', data: small }, { name: 'bg_image_file', filename: 'bg', data: background }]);
      const url = (path: string) => () => base64(t, token, small, { bg_image_url: `${origin}${path}` });

      const decode = 12 * size.width * size.height;
      const withJpegFile = await added(file(jpeg));
      expect(await added(file(heic), withJpegFile + decode + heic.length - jpeg.length)).toBe(withJpegFile + decode + heic.length - jpeg.length);
      const withJpegUrl = await added(url('/bg.jpg'));
      expect(await added(url('/bg.heic'), withJpegUrl + decode)).toBe(withJpegUrl + decode);

      open();
      for (const answer of await Promise.all(answers)) expect(answer.statusCode, answer.body).toBe(200);
      await until(() => reserved() === 0, 'every reservation is released');
    } finally {
      open();
      await t.close();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

describe('refused before the model', () => {
  it('a bg_image_url of a private address is refused as written, on both wires, and the model never runs', async () => {
    const segmenter = fakeSegmenter();
    const t = await startTestApp({ rateLimit: 0 }, { model: ModelService.ofSegmenter(segmenter) });
    try {
      const token = await t.managedToken();
      for (const url of ['http://10.0.0.1/bg.png', 'http://[::1]/bg.png', 'http://169.254.169.254/latest', 'file:///etc/passwd']) {
        const native = await base64(t, token, small, { bg_image_url: url });
        expect(native.statusCode, native.body).toBe(400);
        expect(native.json().code).toBe('url_not_allowed');
        expect(native.json().detail).toMatch(/^bg_image_url/);
      }
      const { tokenId } = await t.tokens.createUserToken('compat');
      const compat = await removebg(t, tokenId, { image_file_b64: small.toString('base64'), bg_image_url: 'http://192.168.1.1/bg.jpg' });
      expect(removeBgError(compat, 400, 'failed_bg_download').detail).toMatch(/^bg_image_url/);
      expect(segmenter.runs).toBe(0);
      expect(t.app.queue.passes).toBe(0);
      expect(t.app.removals.memory.reserved).toBe(0);
    } finally {
      await t.close();
    }
  });

  it('the URL is refused before the request asks for memory: a photo over the budget with a private bg_image_url is 400, not 503', async () => {
    const t = await startTestApp({ rateLimit: 0, memoryBudget: 16 * MB }, { model: ModelService.ofSegmenter(fakeSegmenter()) });
    try {
      const refused = await base64(t, await t.managedToken(), large, { bg_image_url: 'http://10.1.2.3/bg.png' });
      expect(refused.statusCode, refused.body).toBe(400);
      expect(refused.json().code).toBe('url_not_allowed');
    } finally {
      await t.close();
    }
  });
});

describe('the compatible prefixes\' unknown routes and the background\'s field', () => {
  let t: TestApp;
  let key: string;
  let server: Server;
  let origin: string;
  const tiny = () => makePhoto('jpeg', 64, 48);

  beforeAll(async () => {
    t = await startTestApp({ rateLimit: 0, maxPixels: 100_000, maxImageBytes: 4096, urlAllowPrivate: true }, { model: ModelService.ofSegmenter(fakeSegmenter()) });
    key = (await t.tokens.createUserToken('compat')).tokenId;
    server = createServer((_request, response) => response.end(Buffer.alloc(5000, 0xff)));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await t?.close();
    await new Promise((resolve) => server?.close(resolve));
  });

  it('unknown paths and methods under /v1.0/ answer in remove.bg\'s body, under /v1/ in Photoroom\'s, elsewhere in the native problem', async () => {
    for (const [method, url] of [['GET', '/v1.0/nothing'], ['GET', '/v1.0/removebg'], ['DELETE', '/v1.0/account']] as const) {
      const response = await t.app.inject({ method, url });
      expect(response.statusCode).toBe(404);
      expect(response.headers['content-type']).toMatch(/^application\/json/);
      expect(response.json().errors[0].code).toBe('not_found');
    }
    for (const [method, url] of [['POST', '/v1/nothing'], ['GET', '/v1/segment']] as const) {
      const response = await t.app.inject({ method, url });
      expect(response.statusCode).toBe(404);
      expect(response.json()).toMatchObject({ status_code: 404, type: 'not_found' });
    }
    const native = await t.app.inject({ method: 'GET', url: '/api/v1/nothing' });
    expect(native.statusCode).toBe(404);
    expect(native.headers['content-type']).toMatch(/problem\+json/);
  });

  it('a bg_image_file over the pixel or byte limit names bg_image_file, never bg_image_url', async () => {
    const photo = await tiny();
    const manyPixels = await sharp({ create: { width: 400, height: 400, channels: 3, background: '#00c000' } }).png({ compressionLevel: 9 }).toBuffer();
    expect(manyPixels.length).toBeLessThan(4096);
    const pixels = removeBgError(await upload(t, key, [{ name: 'image_file', filename: 'a.jpg', data: photo }, { name: 'bg_image_file', filename: 'bg.png', data: manyPixels }, { name: 'size', data: 'full' }]), 400, 'resolution_too_high');
    expect(pixels.detail).toMatch(/^bg_image_file: /);
    const bytes = removeBgError(await upload(t, key, [{ name: 'image_file', filename: 'a.jpg', data: photo }, { name: 'bg_image_file', filename: 'bg.png', data: Buffer.alloc(5000, 1) }]), 400, 'file_too_large');
    expect(bytes.detail).toMatch(/^bg_image_file: /);
  });

  it('a bg_image_url download over the byte limit says it was the background', async () => {
    const photo = await tiny();
    const compat = removeBgError(await removebg(t, key, { image_file_b64: photo.toString('base64'), bg_image_url: `${origin}/bg.png` }), 400, 'file_too_large');
    expect(compat.detail).toMatch(/^bg_image_url: /);
    const native = await base64(t, await t.managedToken(), photo, { bg_image_url: `${origin}/bg.png` });
    expect(native.statusCode, native.body).toBe(413);
    expect(native.json().detail).toMatch(/^bg_image_url: /);
  });
});
