import { describe, expect, it } from 'vitest';
import { DEFAULT_ANSWER, type AnswerSpec } from '../../src/pipeline/answer-spec.js';
import { BYTES_PER_PIXEL, ENCODED_BYTES_PER_PIXEL } from '../../src/pipeline/pixel-bytes.js';
import { backgroundDecodeBytes, estimateRemovalBytes, type RemovalFootprint } from '../../src/removal/memory-estimate.js';

const MB = 1e6;
const photo = (width: number, height: number, more: Partial<RemovalFootprint> = {}): RemovalFootprint => ({
  width,
  height,
  heic: false,
  photoBytes: 0,
  backgroundBytes: 0,
  answer: DEFAULT_ANSWER,
  base64Answer: true,
  refine: true,
  looks: 1,
  modelSize: 1024,
  ...more,
});
const withAnswer = (answer: Partial<AnswerSpec>) => ({ answer: { ...DEFAULT_ANSWER, ...answer } });

describe('backgroundDecodeBytes', () => {
  it('counts an HEIC background whole, RGBA and libheif beside it, and nothing for one sharp streams', () => {
    expect(backgroundDecodeBytes({ width: 4000, height: 3000, heic: true })).toBe(12 * 4000 * 3000);
    expect(backgroundDecodeBytes({ width: 4000, height: 3000, heic: false })).toBe(0);
  });
});

describe('estimateRemovalBytes', () => {
  it('adds up the documented arithmetic for the default answer', () => {
    const p = 1000 * 1000;
    const held = 2000 + 1 * 5 * 1024 * 1024;
    const finish = (4 + 3) * p + (1 + (7 / 3) * ENCODED_BYTES_PER_PIXEL.png) * p;
    expect(estimateRemovalBytes(photo(1000, 1000, { photoBytes: 2000 }))).toBe(Math.ceil(held + finish));
  });

  it('a 50 MP zip costs more than a 0.3 MP PNG, by about the pixels', () => {
    const big = estimateRemovalBytes(photo(8000, 6250, withAnswer({ format: 'zip' })));
    const small = estimateRemovalBytes(photo(640, 480));
    expect(big).toBeGreaterThan(50 * small);
    expect(big).toBeGreaterThan(estimateRemovalBytes(photo(8000, 6250)));
  });

  it('a 49 MP HEIC counts libheif beside its pixels, and never less than a JPEG of the same size', () => {
    const heic = estimateRemovalBytes(photo(7000, 7000, { heic: true }));
    expect(heic).toBeGreaterThanOrEqual((BYTES_PER_PIXEL.photo + BYTES_PER_PIXEL.heicDecoder) * 49 * MB);
    expect(heic).toBeGreaterThanOrEqual(estimateRemovalBytes(photo(7000, 7000)));
    // A small answer does not shrink what libheif decodes: the whole picture, whatever the answer.
    expect(estimateRemovalBytes(photo(7000, 7000, { heic: true, ...withAnswer({ maxWidth: 500 }) }))).toBeGreaterThanOrEqual(12 * 49 * MB);
    // Under the default budget of 768 MiB: the largest photo the pixel limit lets in, answered by default, fits.
    expect(estimateRemovalBytes(photo(7071, 7071, { heic: true, looks: 2 }))).toBeLessThan(768 * 2 ** 20);
    expect(estimateRemovalBytes(photo(8000, 6250, { base64Answer: false, ...withAnswer({ format: 'zip' }) }))).toBeLessThan(768 * 2 ** 20);
  });

  it('each option that holds more pixels costs more: shadow, backgrounds, the blurred photo, crop, two looks', () => {
    const base = estimateRemovalBytes(photo(2000, 1500));
    const costs = [
      withAnswer({ shadow: { opacity: 0.5, kind: 'drop' } }),
      withAnswer({ background: { colour: [255, 0, 0, 255] } }),
      withAnswer({ background: { image: true } }),
      withAnswer({ background: { blur: 12 } }),
      withAnswer({ crop: { margin: { value: 0, unit: 'px' } } }),
      { looks: 2 as const },
      { backgroundBytes: 5 * MB },
    ].map((more) => estimateRemovalBytes(photo(2000, 1500, more)));
    for (const cost of costs) expect(cost).toBeGreaterThan(base);
    // A JPEG is laid over white (a new frame), but its bytes are fewer than a PNG's.
    expect(estimateRemovalBytes(photo(2000, 1500, withAnswer({ format: 'jpeg' })))).toBeLessThan(base);
    const image = estimateRemovalBytes(photo(2000, 1500, withAnswer({ background: { image: true } })));
    const blur = estimateRemovalBytes(photo(2000, 1500, withAnswer({ background: { blur: 12 } })));
    expect(blur).toBeGreaterThan(image);
  });

  it('an answer sent as its bytes costs less than one sent as Base64 in JSON', () => {
    expect(estimateRemovalBytes(photo(4000, 3000, { base64Answer: false }))).toBeLessThan(estimateRemovalBytes(photo(4000, 3000)));
  });

  it('a smaller answer costs less: max_width, size (max pixels), WebP, no refinement', () => {
    const base = estimateRemovalBytes(photo(6000, 4000));
    expect(estimateRemovalBytes(photo(6000, 4000, withAnswer({ maxWidth: 600 })))).toBeLessThan(base / 10);
    expect(estimateRemovalBytes(photo(6000, 4000, withAnswer({ maxPixels: 250_000 })))).toBeLessThan(base / 10);
    expect(estimateRemovalBytes(photo(6000, 4000, withAnswer({ format: 'webp' })))).toBeLessThan(base);
    expect(estimateRemovalBytes(photo(6000, 4000, { refine: false }))).toBeLessThan(base);
  });

  it('a crop keeps the whole photo decoded, and its caps only bound it when both sides are given', () => {
    const crop = { crop: { margin: { value: 0, unit: 'px' as const } } };
    const widthOnly = estimateRemovalBytes(photo(6000, 4000, withAnswer({ ...crop, maxWidth: 600 })));
    expect(widthOnly).toBeGreaterThanOrEqual(estimateRemovalBytes(photo(6000, 4000)));
    const both = estimateRemovalBytes(photo(6000, 4000, withAnswer({ ...crop, maxWidth: 600, maxHeight: 400 })));
    expect(both).toBeLessThan(widthOnly);
    expect(both).toBeGreaterThan((BYTES_PER_PIXEL.photo + BYTES_PER_PIXEL.refine) * 24 * MB);
  });
});
