import { describe, expect, it } from 'vitest';
import { InferenceQueue } from '../../src/inference/inference-queue.js';

describe('InferenceQueue.idle', () => {
  it('is true only while a new job would start at once', async () => {
    const queue = new InferenceQueue({ concurrency: 1, maxQueued: 4 });
    expect(queue.idle).toBe(true);
    let release!: () => void;
    const first = queue.run(() => new Promise<void>((resolve) => (release = resolve)));
    expect(queue.idle).toBe(false); // the one slot is taken
    const second = queue.run(async () => {});
    expect(queue.queued).toBe(1);
    release();
    await Promise.all([first, second]);
    expect(queue.idle).toBe(true);
  });
});
