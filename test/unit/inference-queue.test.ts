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

describe('InferenceQueue.claim', () => {
  it('gives the idle model to the first claimant only, until it is released', async () => {
    const queue = new InferenceQueue({ concurrency: 1, maxQueued: 4 });
    const release = queue.claim();
    expect(release).toBeTypeOf('function');
    expect(queue.idle).toBe(false);
    expect(queue.claim()).toBeUndefined(); // a burst's second image waits for its turn
    release!();
    release!(); // a second release changes nothing
    expect(queue.idle).toBe(true);
    expect(queue.claim()).toBeTypeOf('function');
    expect(queue.claim()).toBeUndefined(); // the double release did not free a second slot
  });

  it('is refused while the model runs, and does not hold back run for other jobs', async () => {
    const queue = new InferenceQueue({ concurrency: 1, maxQueued: 4 });
    const release = queue.claim();
    await expect(queue.run(async () => 'ran')).resolves.toBe('ran');
    release!();
    let finish!: () => void;
    const running = queue.run(() => new Promise<void>((resolve) => (finish = resolve)));
    expect(queue.claim()).toBeUndefined();
    finish();
    await running;
    expect(queue.claim()).toBeTypeOf('function');
  });
});
