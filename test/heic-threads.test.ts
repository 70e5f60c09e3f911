import { execFile } from 'node:child_process';
import { getEventListeners } from 'node:events';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { decodePhoto } from '../src/pipeline/decode.js';
import { HeicThread } from '../src/pipeline/heic-thread.js';
import { isDecodedPixels, type PhotoInput } from '../src/pipeline/photo-input.js';
import { makePhoto } from './helpers/images.js';
import { threadsOf } from '../scripts/lib/proc-threads.js';

/**
 * The HEIC threads (`src/pipeline/heic-thread.ts`): an HEIC decoded once into memory the
 * threads share, small photos decoded beside a large one instead of behind it, and threads
 * ended once their decoder has grown or they have been idle. The HEICs are made here by
 * Debian's heif-enc (libheif-examples).
 */

let dir: string;
let png: Buffer;
let tiny: Buffer;
let large: Buffer;

async function heic(width: number, height: number, photo?: Buffer): Promise<Buffer> {
  const source = join(dir, `${width}x${height}.png`);
  await writeFile(source, photo ?? (await makePhoto('png', width, height)));
  await promisify(execFile)('heif-enc', ['-q', '50', '-o', `${source}.heic`, source]);
  return readFile(`${source}.heic`);
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'cutout-heic-threads-'));
  png = await makePhoto('png', 320, 240);
  tiny = await heic(320, 240);
  large = await heic(3000, 3000);
}, 120_000);

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

const pixelsOf = (photo: PhotoInput) => {
  if (!isDecodedPixels(photo)) throw new Error('the HEIC came back as bytes');
  return photo;
};

describe('HEIC threads', () => {
  it('decode an HEIC once, into memory shared between threads, the photo\'s own pixels', async () => {
    const threads = new HeicThread();
    try {
      const photo = pixelsOf(await threads.readable(tiny, 1e6));
      const { image, opaque } = photo;
      expect(image.data.buffer).toBeInstanceOf(SharedArrayBuffer);
      // The finish thread's photo is these very pixels, not a copy.
      expect((await decodePhoto(photo, { maxPixels: 1e6 })).image.data).toBe(image.data);
      expect([image.width, image.height, image.channels, opaque]).toEqual([320, 240, 4, true]);
      const expected = await sharp(png).ensureAlpha().raw().toBuffer();
      let sum = 0;
      for (let i = 0; i < expected.length; i++) sum += Math.abs(expected[i] - image.data[i]);
      expect(sum / expected.length).toBeLessThan(4); // HEIC is lossy
      expect(await threads.readable(png, 1e6)).toBe(png); // anything else passes as it is
    } finally {
      await threads.close();
    }
  });

  it('leaves no listener on the request\'s signal once an HEIC is decoded, so a signal that outlives it keeps no pixels', async () => {
    const threads = new HeicThread();
    try {
      const controller = new AbortController();
      pixelsOf(await threads.readable(tiny, 1e6, controller.signal));
      expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
    } finally {
      await threads.close();
    }
  });

  it('a transparent HEIC is flattened on white for the finishing, as a transparent PNG is', async () => {
    const transparent = await sharp({ create: { width: 64, height: 48, channels: 4, background: { r: 200, g: 40, b: 0, alpha: 0.5 } } }).png().toBuffer();
    const threads = new HeicThread();
    try {
      const pixels = pixelsOf(await threads.readable(await heic(64, 48, transparent), 1e6));
      expect(pixels.opaque).toBe(false);
      const [fromHeic, fromPng] = await Promise.all([decodePhoto(pixels, { maxPixels: 1e6 }), decodePhoto(transparent, { maxPixels: 1e6 })]);
      expect(fromHeic.image.data).not.toBe(pixels.image.data); // a copy: the shared pixels keep their alpha
      let sum = 0;
      for (let i = 0; i < fromPng.image.data.length; i++) sum += Math.abs(fromPng.image.data[i] - fromHeic.image.data[i]);
      expect(sum / fromPng.image.data.length).toBeLessThan(4);
      expect(fromHeic.image.data[3]).toBe(255);
    } finally {
      await threads.close();
    }
  });

  it('a small HEIC sent just after large ones is decoded beside them, not behind', async () => {
    const threads = new HeicThread({ threads: 2, largePixels: 1e6 });
    try {
      const done: string[] = [];
      const track = (name: string, bytes: Buffer) => threads.readable(bytes, 50e6).then(() => done.push(name));
      await Promise.all([track('large', large), track('large', large), track('small', tiny)]);
      // Large ones take one thread at a time; the other is the small one's. (Which large one
      // comes first depends on whose header sharp reads first.)
      expect(done).toEqual(['small', 'large', 'large']);
    } finally {
      await threads.close();
    }
  });

  it('a thread whose decoder grew past its keep is ended after the image, an idle one after idleMs', async () => {
    const threads = new HeicThread({ keepDecoderBytes: 48 * 2 ** 20, idleMs: 300 });
    try {
      await threads.readable(tiny, 50e6);
      expect(threads.threadCount).toBe(1); // kept for the next photo
      await threads.readable(large, 50e6); // 9 MP: some 50 MB of libheif's memory
      expect(threads.threadCount).toBe(0);
      await threads.readable(tiny, 50e6);
      expect(threads.threadCount).toBe(1);
      await new Promise((resolve) => setTimeout(resolve, 600));
      expect(threads.threadCount).toBe(0);
    } finally {
      await threads.close();
    }
  });

  it('a large photo is decoded at the lowest priority (Linux), on a thread ended afterwards; a small one at the default', async () => {
    const niceValues = async () => (await threadsOf('self')).map((thread) => thread.nice);
    const threads = new HeicThread({ threads: 2, largePixels: 1e6 });
    try {
      let lowered = false;
      const decoding = threads.readable(large, 50e6);
      let done = false;
      void decoding.then(
        () => (done = true),
        () => (done = true),
      );
      while (!done) {
        if ((await niceValues()).includes(19)) lowered = true;
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      pixelsOf(await decoding);
      expect(lowered).toBe(true);
      // Its thread is ended (a spare one, at the default, may wait for the next small photo).
      await vi.waitFor(async () => expect(await niceValues()).not.toContain(19));
      pixelsOf(await threads.readable(tiny, 50e6));
      expect(threads.threadCount).toBeGreaterThan(0); // kept
      expect(await niceValues()).not.toContain(19);
    } finally {
      await threads.close();
    }
  });

  it('a photo whose request gives up leaves the queue, or has its decode ended with its thread', async () => {
    const threads = new HeicThread({ threads: 1 });
    try {
      const [decoding, waiting] = [new AbortController(), new AbortController()];
      const first = threads.readable(large, 50e6, decoding.signal);
      while (threads.threadCount === 0) await new Promise((resolve) => setTimeout(resolve, 10));
      const second = threads.readable(large, 50e6, waiting.signal);
      await new Promise((resolve) => setTimeout(resolve, 50)); // the first photo is being decoded, the second waits
      // The outcome as text: a failure here must not print megabytes of pixels.
      const outcome = (decode: Promise<PhotoInput>) => decode.then(() => 'decoded', (error: Error) => error.message);
      waiting.abort(new Error('client gone'));
      expect(await outcome(second)).toBe('client gone');
      decoding.abort(new Error('deadline passed'));
      expect(await outcome(first)).toBe('deadline passed');
      expect(threads.threadCount).toBe(0);
      expect(pixelsOf(await threads.readable(tiny, 1e6)).image.width).toBe(320);
    } finally {
      await threads.close();
    }
  });

  it('an HEIC over the pixel limit by its header is refused before it takes a thread', async () => {
    const threads = new HeicThread();
    try {
      await expect(threads.readable(large, 1e6)).rejects.toMatchObject({ code: 'too_many_pixels' });
      expect(threads.threadCount).toBe(0);
    } finally {
      await threads.close();
    }
  });
});
