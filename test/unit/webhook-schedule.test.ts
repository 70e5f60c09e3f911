import { describe, expect, it } from 'vitest';
import { jitteredSchedule, WEBHOOK_RETRY_CEILINGS, WEBHOOK_RETRY_FLOOR_MS, WEBHOOK_RETRY_WINDOW_MS } from '../../src/jobs/webhook-schedule.js';

/** A small seeded generator (mulberry32), so that a draw that fails can be replayed. */
function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const SECOND = 1000;
const HOUR = 3600 * SECOND;

describe('the webhook retry schedule', () => {
  it('waits between 1 s and the ceiling of the attempt: 10 s, 30 s, 1 min, 5 min, 15 min, 30 min, 1 h, then 2 h', () => {
    expect(WEBHOOK_RETRY_CEILINGS.map((ms) => ms / SECOND)).toEqual([10, 30, 60, 300, 900, 1800, 3600, 7200]);
    const lowest = jitteredSchedule(() => 0);
    // Math.random never returns 1; the largest double below it stands for its top.
    const highest = jitteredSchedule(() => 1 - Number.EPSILON / 2);
    const attempts = Array.from({ length: 10 }, (_, i) => i + 1);
    expect(attempts.map((n) => lowest.delayAfter(n))).toEqual(Array(10).fill(WEBHOOK_RETRY_FLOOR_MS));
    expect(attempts.map((n) => highest.delayAfter(n) / SECOND)).toEqual([10, 30, 60, 300, 900, 1800, 3600, 7200, 7200, 7200]);
    expect(jitteredSchedule(() => 0.5).delayAfter(1)).toBe(5500);
    expect(lowest.windowMs).toBe(24 * HOUR);
  });

  it('spreads the retries of deliveries that failed together over the whole interval (full jitter)', () => {
    const schedule = jitteredSchedule(seeded(40));
    for (const [index, ceiling] of WEBHOOK_RETRY_CEILINGS.entries()) {
      const draws = Array.from({ length: 2000 }, () => schedule.delayAfter(index + 1));
      expect(Math.min(...draws)).toBeGreaterThanOrEqual(WEBHOOK_RETRY_FLOOR_MS);
      expect(Math.max(...draws)).toBeLessThanOrEqual(ceiling);
      // Uniform: each tenth of the interval holds about a tenth of the draws (200 ± 60).
      const tenths = Array(10).fill(0);
      for (const draw of draws) tenths[Math.min(9, Math.floor(((draw - WEBHOOK_RETRY_FLOOR_MS) / (ceiling - WEBHOOK_RETRY_FLOOR_MS)) * 10))]++;
      for (const count of tenths) {
        expect(count).toBeGreaterThan(140);
        expect(count).toBeLessThan(260);
      }
    }
  });

  it('is the same for the same draws, and different for different ones', () => {
    const run = (seed: number) => {
      const schedule = jitteredSchedule(seeded(seed));
      return Array.from({ length: 8 }, (_, i) => schedule.delayAfter(i + 1));
    };
    expect(run(7)).toEqual(run(7));
    expect(run(7)).not.toEqual(run(8));
  });

  it('makes about 30 attempts in the 24 hours after the job ended when every one fails', () => {
    const counts = [1, 2, 3, 4, 5].map((seed) => {
      const schedule = jitteredSchedule(seeded(seed));
      let at = 0;
      let attempts = 1;
      for (let wait = schedule.delayAfter(attempts); at + wait <= WEBHOOK_RETRY_WINDOW_MS; wait = schedule.delayAfter(attempts)) {
        at += wait;
        attempts++;
      }
      return attempts;
    });
    for (const count of counts) {
      expect(count).toBeGreaterThanOrEqual(22);
      expect(count).toBeLessThanOrEqual(40);
    }
  });
});
