import { createHash } from 'node:crypto';
import sharp from 'sharp';
import { afterAll, describe, expect, it } from 'vitest';
import type { RawImage } from '../../src/image/raw-image.js';
import type { Segmenter } from '../../src/model/segmenter.js';
import type { RemovedBackground } from '../../src/pipeline/remove-background.js';
import { FinishThread } from '../../src/pipeline/finish-thread.js';
import { removeBackground } from '../../src/pipeline/remove-background.js';
import { needsSecondLook } from '../../src/pipeline/second-look.js';
import { mirrorImage, type Quality } from '../../src/pipeline/views.js';

const SIZE = 64;

/** A fake model that answers each picture with `answer(its pixels)` and records what it is shown, call by call. */
function recordingSegmenter(answer: (picture: Uint8Array) => Uint8Array): Segmenter & { seen: Uint8Array[][] } {
  const segmenter = {
    size: SIZE,
    seen: [] as Uint8Array[][],
    async segment(pictures: readonly RawImage[]) {
      segmenter.seen.push(pictures.map((picture) => picture.data.slice()));
      return pictures.map(({ data }) => ({ data: answer(data), width: SIZE, height: SIZE, channels: 1 as const }));
    },
    close: async () => {},
  };
  return segmenter;
}

/** Doubtful: soft everywhere, and lopsided, so that the mirror's answer differs from the photo's. */
const lopsided = (data: Uint8Array) => Uint8Array.from({ length: SIZE * SIZE }, (_, i) => Math.min(255, Math.round(data[3 * i] * 0.7 + ((i % SIZE) * 5) % 97)));
/** Sure: a disc in the middle, 255 inside and 0 outside, whatever the picture. */
const sureDisc = () => Uint8Array.from({ length: SIZE * SIZE }, (_, i) => (Math.hypot((i % SIZE) - SIZE / 2, Math.floor(i / SIZE) - SIZE / 2) < SIZE / 4 ? 255 : 0));

/** A 200×150 photo: a bright disc with a soft edge on a darker gradient. */
async function photo(): Promise<Buffer> {
  const width = 200;
  const height = 150;
  const data = new Uint8Array(width * height * 3);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const inside = Math.max(0, Math.min(1, (40 - Math.hypot(x - 80, y - 70)) / 6));
      const i = 3 * (y * width + x);
      data[i] = Math.round(40 + 200 * inside + x / 8);
      data[i + 1] = Math.round(90 + 60 * inside);
      data[i + 2] = Math.round(120 - 80 * inside + y / 10);
    }
  }
  return sharp(data, { raw: { width, height, channels: 3 } }).png().toBuffer();
}

/** The answer's pixels (not its PNG bytes, which an encoder upgrade may change), hashed. */
async function pixelHash(png: Buffer): Promise<string> {
  const { data, info } = await sharp(png).raw().toBuffer({ resolveWithObject: true });
  return createHash('sha256').update(`${info.width}×${info.height}×${info.channels}`).update(data).digest('hex');
}

const same = (a: Uint8Array, b: Uint8Array) => Buffer.from(a).equals(Buffer.from(b));

describe('quality=auto', () => {
  const finisher = new FinishThread();
  afterAll(() => finisher.close());
  const remove = async (answer: (picture: Uint8Array) => Uint8Array, quality: Quality, refine = true) => {
    const segmenter = recordingSegmenter(answer);
    const removed = await removeBackground(await photo(), { segmenter, finisher, maxPixels: 1e6, refine, quality });
    return { removed, seen: segmenter.seen };
  };
  const answered = async ({ removed }: { removed: RemovedBackground }) => `${await pixelHash(removed.bytes)} ${removed.uncertainty.toFixed(6)} ${removed.looks}`;

  // Taken from the pipeline as it was before quality=auto: fast and best must not move a byte.
  const BEFORE = {
    'fast raw': '78eb5e11f25d8c3d89339c8c4433a70704a4888ffea6715d02b1ca1bfb9559b7 1.000000',
    'fast refined': '356980f7d18cb54b396a0f86b11410bd70a19d2836f69cfef473c0b1839de322 1.000000',
    'best raw': '018a6d2ada6c8c0edcc7a7deb90635eda0ff66b5e2e32e941c2f6a2895e69e3b 0.422148',
    'best refined': '6c800e1fd13a98f4cb950929e44f3bfe3efabfadcdd5c4e4b419661aba5c6a9b 0.422148',
  };

  it('leaves fast and best as they were, byte for byte, one call to the model each', async () => {
    for (const quality of ['fast', 'best'] as const) {
      for (const refine of [false, true]) {
        const run = await remove(lopsided, quality, refine);
        expect(`${await pixelHash(run.removed.bytes)} ${run.removed.uncertainty.toFixed(6)}`).toBe(BEFORE[`${quality} ${refine ? 'refined' : 'raw'}`]);
        expect(run.seen.map((call) => call.length)).toEqual([quality === 'fast' ? 1 : 2]);
        expect(run.removed.looks).toBe(quality === 'fast' ? 1 : 2);
      }
    }
  });

  it('answers as fast does after a sure first look, with one look', async () => {
    const disc = await remove(sureDisc, 'auto');
    expect(needsSecondLook({ data: sureDisc(), width: SIZE, height: SIZE, channels: 1 })).toBe(false);
    expect(disc.seen.map((call) => call.length)).toEqual([1]);
    expect(disc.removed.looks).toBe(1);
    expect(await answered(disc)).toBe((await answered(await remove(sureDisc, 'fast'))));
  });

  it('answers as best does after a doubtful first look, the photo shown once and then its mirror', async () => {
    const doubtful = await remove(lopsided, 'auto');
    expect(doubtful.seen.map((call) => call.length)).toEqual([1, 1]);
    const [[photoSeen], [mirrorSeen]] = doubtful.seen;
    expect(same(mirrorSeen, mirrorImage({ data: photoSeen, width: SIZE, height: SIZE, channels: 3 }).data)).toBe(true);
    expect(doubtful.removed.looks).toBe(2);
    const best = await remove(lopsided, 'best');
    expect(same(best.seen[0][0], photoSeen) && same(best.seen[0][1], mirrorSeen)).toBe(true);
    expect(await answered(doubtful)).toBe(await answered(best));
    expect(await pixelHash(doubtful.removed.bytes)).toBe(BEFORE['best refined'].split(' ')[0]);
  });
});
