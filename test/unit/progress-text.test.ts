import { describe, expect, it } from 'vitest';
import { progressText } from '../../src/jobs/progress-text.js';

describe('progressText', () => {
  it('says the pace, the estimated end and what the server gives jobs', () => {
    expect(progressText({ imagesPerMinute: 12.5, estimatedFinishAt: '2026-11-28T14:05:31.000Z', pace: 'all_passes', minimumShare: 0.1 })).toBe(
      '12.5 images a minute over the last 5 minutes; done about 14:05 UTC at that pace. Jobs take every pass the server has.',
    );
    expect(progressText({ imagesPerMinute: 0, estimatedFinishAt: null, pace: 'minimum_share', minimumShare: 0.2 })).toBe(
      'no image ended in the last 5 minutes. Requests keep the server busy: jobs get their minimum share, one model pass in 5.',
    );
    expect(progressText({ imagesPerMinute: 0, estimatedFinishAt: null, pace: 'minimum_share', minimumShare: 0 })).toMatch(/only the passes they leave \(CUTOUT_JOB_MIN_SHARE is 0\)/);
  });
});
