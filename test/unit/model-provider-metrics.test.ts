import { describe, expect, it } from 'vitest';
import { CutoutMetrics, type ModelRun } from '../../src/metrics/cutout-metrics.js';

// Where each model runs, as Prometheus sees it: its provider, precision and pass time at
// start, and whether it can still run (a GPU lost turns it to 0).

const queue = { queued: 0, running: 0, passes: 0, passesFor: { interactive: 0, job: 0 } };

describe('provider gauges', () => {
  it('name each model’s provider and precision with its pass at start, and drop to 0 when it can run no more', async () => {
    const gpu: { name: string; provider: string; choice: { precision: string }; passMs: number; segmenter: { failure?: Error } } = {
      name: 'isnet',
      provider: 'webgpu',
      choice: { precision: 'fp16' },
      passMs: 33.5,
      segmenter: {},
    };
    const models: ModelRun[] = [gpu, { name: 'isnet-small', provider: 'cpu', choice: { precision: 'int8' }, passMs: 545, segmenter: {} }];
    const metrics = new CutoutMetrics(queue, undefined, () => models);
    let text = await metrics.text();
    expect(text).toContain('cutout_model_start_pass_seconds{model="isnet",provider="webgpu",precision="fp16"} 0.0335');
    expect(text).toContain('cutout_model_start_pass_seconds{model="isnet-small",provider="cpu",precision="int8"} 0.545');
    expect(text).toContain('cutout_model_up{model="isnet",provider="webgpu"} 1');
    gpu.segmenter.failure = new Error('device lost');
    text = await metrics.text();
    expect(text).toContain('cutout_model_up{model="isnet",provider="webgpu"} 0');
    expect(text).toContain('cutout_model_up{model="isnet-small",provider="cpu"} 1');
  });

  it('are absent when nothing tells where the models run', async () => {
    expect(await new CutoutMetrics(queue).text()).not.toContain('cutout_model_up');
  });
});
