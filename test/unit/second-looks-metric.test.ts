import { describe, expect, it } from 'vitest';
import { CutoutMetrics } from '../../src/metrics/cutout-metrics.js';

/** The value of an unlabelled sample in Prometheus' text format. */
const sample = (text: string, name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1]);

describe('cutout_second_looks_total', () => {
  it('counts the removals whose model took a second look, and only those', async () => {
    const metrics = new CutoutMetrics({ queued: 0, running: 0, passes: 0, passesFor: { interactive: 0, job: 0 } });
    expect(sample(await metrics.text(), 'cutout_second_looks_total')).toBe(0);
    metrics.observeRemoval({ queue: 1, inference: 500, model: 'isnet', looks: 2 }, 0.6);
    metrics.observeRemoval({ queue: 1, inference: 250, model: 'isnet', looks: 1 }, 0.3);
    metrics.observeRemoval({ queue: 1, inference: 250, model: 'isnet' }, 0.3);
    metrics.observeRemoval({ queue: 1, inference: 500, model: 'isnet', looks: 2 }, 0.6);
    const text = await metrics.text();
    expect(sample(text, 'cutout_second_looks_total')).toBe(2);
    expect(sample(text, 'cutout_removal_duration_seconds_count')).toBe(4);
  });
});
