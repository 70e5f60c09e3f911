import { describe, expect, it } from 'vitest';
import { LARGE_PHOTO_PIXELS } from '../../src/pipeline/photo-input.js';
import { WorkTimes } from '../../src/removal/work-times.js';

const steady = (times: WorkTimes, pixels: number | undefined, ms: number) => {
  for (let i = 0; i < 80; i++) times.record(pixels, ms);
};

describe('WorkTimes', () => {
  it('learns large and small photos apart, a photo of unknown size counting as large', () => {
    const times = new WorkTimes();
    const small = 1e6;
    const large = LARGE_PHOTO_PIXELS + 1;
    const before = { small: times.expectedMs(small), large: times.expectedMs(large) };
    expect(before.large).toBeGreaterThan(before.small);
    steady(times, small, 800);
    expect(times.expectedMs(small)).toBeCloseTo(800, 0);
    expect(times.expectedMs(large)).toBe(before.large);
    steady(times, undefined, 30_000);
    expect(times.expectedMs(large)).toBeCloseTo(30_000, 0);
    expect(times.expectedMs(LARGE_PHOTO_PIXELS)).toBeCloseTo(800, 0);
  });

  it('gives work that varies its average and twice its mean deviation', () => {
    const times = new WorkTimes();
    for (let i = 0; i < 200; i++) times.record(1e6, i % 2 === 0 ? 1000 : 3000);
    // The average swings around 2000, its deviation around 1000: about 4000 ms.
    expect(times.expectedMs(1e6)).toBeGreaterThan(3500);
    expect(times.expectedMs(1e6)).toBeLessThan(4600);
    steady(times, 1e6, 2000);
    expect(times.expectedMs(1e6)).toBeCloseTo(2000, 0);
  });

  it('gives up waiting its expected work before the deadline, and asks to retry after that work, in whole seconds', () => {
    const times = new WorkTimes();
    steady(times, 1e6, 2400);
    const { giveUpAt, retryAfterSeconds } = times.patience(1e6, 60_000);
    expect(giveUpAt).toBeCloseTo(60_000 - 2400, 0);
    expect(retryAfterSeconds).toBe(3);
    steady(times, 1e6, 10);
    expect(times.patience(1e6, 60_000).retryAfterSeconds).toBe(1);
  });
});
